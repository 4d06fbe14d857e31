from oslo_config import cfg

GROUP = 'nvidia_gpu'

opts = [
    cfg.IntOpt('temperature_threshold',
               default=85, min=0,
               help='GPU core temperature, in degrees Celsius, above which '
                    'the nvidia_gpu driver reports a GPU unhealthy so that '
                    'no new work is bound to it. Datacenter GPUs start to '
                    'slow down a few degrees above 85; "nvidia-smi -q -d '
                    'TEMPERATURE" shows the slowdown threshold of a card.'),
    cfg.ListOpt('enabled_vgpu_types',
                default=[],
                help='The vGPU types (mdev type ids such as nvidia-471) '
                     'the nvidia_gpu driver offers, as Nova and Cyborg '
                     'name them. A GPU offers at most one type, since the '
                     'hardware gives N of one type or the whole GPU, '
                     'never both: the type whose [vgpu_<type>] '
                     'device_addresses lists the GPU (its PCI address, '
                     'e.g. 0000:3b:00.0), or, when only one type is '
                     'enabled and that option is not set, every GPU that '
                     'offers it. Such a GPU is one VGPU deployable with '
                     'as many vGPUs as the type allows; every other GPU is '
                     'one PGPU. Changing the type of a GPU that holds '
                     'vGPUs takes effect once they are all released.'),
    cfg.FloatOpt('fatal_xid_hold',
                 default=600, min=0,
                 help='Seconds a GPU stays reported unhealthy after NVML '
                      'raised a fatal event on it: an Xid of the fatal '
                      'class (docs/health.md, "GPU Xid classes": ECC, '
                      'memory repair, NVLink, bus and GSP failures) or a '
                      'double-bit ECC error. The agent hears of such an '
                      'event within a second and sends its readings at '
                      'once, so no new work reaches the GPU; holding the '
                      'verdict keeps the next periodic health check, which '
                      'may not see the fault, from clearing it at once, '
                      'so the conductor and the operator have time to '
                      'drain and reset the GPU. The hold restarts with '
                      'each new fatal event. 0 turns the verdict off: fatal '
                      'events are then only logged and kept as the last '
                      'Xid of the readings.'),
    cfg.StrOpt('sysfs_root',
               default='/sys',
               help='Where sysfs is mounted. The nvidia_gpu driver reads '
                    'vGPU (mdev) types and NUMA nodes there and creates and '
                    'removes mdevs under it. Only tests change it.'),
]


# One group per enabled type, named after it (Nova's convention); the
# sample config cannot list them, enabled_vgpu_types' help says so.
VGPU_GROUP = 'vgpu_%s'
vgpu_opts = [
    cfg.ListOpt('device_addresses',
                default=[],
                help='PCI addresses of the GPUs (physical functions) that '
                     'offer this vGPU type, e.g. 0000:3b:00.0.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def register_vgpu_groups(conf):
    """Register [vgpu_<type>] for every type of enabled_vgpu_types."""
    for type_id in conf[GROUP].enabled_vgpu_types:
        conf.register_opts(vgpu_opts, group=VGPU_GROUP % type_id)


def list_opts():
    return {GROUP: opts}
