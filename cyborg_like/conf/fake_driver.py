from oslo_config import cfg

GROUP = 'fake_driver'

opts = [
    cfg.StrOpt('inventory_file',
               help='YAML file listing the devices the fake driver reports '
                    '(see etc/cyborg_like/fake-inventory.yaml.sample). '
                    'Without it the driver reports one Intel FPGA with two '
                    'programmable regions and one NVIDIA GPU.'),
    cfg.StrOpt('driver_state_dir',
               help='Directory where driver playbooks leave the version of '
                    'the driver family they installed, in a file '
                    '"<family>.version". When set, a device of the '
                    'inventory file naming a "driver_family" is reported '
                    'only while that file exists (no driver, no device), '
                    'with a "driver_version" attribute on its deployables: '
                    'driver operations change what discovery finds.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
