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
    cfg.StrOpt('sysfs_root',
               default='/sys',
               help='Where sysfs is mounted. The nvidia_gpu driver reads '
                    'vGPU (mdev) types and NUMA nodes there and creates and '
                    'removes mdevs under it. Only tests change it.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
