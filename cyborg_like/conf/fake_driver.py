from oslo_config import cfg

GROUP = 'fake_driver'

opts = [
    cfg.StrOpt('inventory_file',
               help='YAML file listing the devices the fake driver reports '
                    '(see etc/cyborg_like/fake-inventory.yaml.sample). '
                    'Without it the driver reports one Intel FPGA with two '
                    'programmable regions and one NVIDIA GPU.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
