from oslo_config import cfg

GROUP = 'conductor'

opts = [
    cfg.IntOpt('host_down_after',
               default=60, min=1,
               help='Seconds without a heartbeat after which a host counts '
                    'as down; its devices are not bound while it is down.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
