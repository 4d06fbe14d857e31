from oslo_config import cfg

GROUP = 'conductor'

opts = [
    cfg.IntOpt('host_down_after',
               default=60, min=1,
               help='Seconds without a heartbeat after which a host counts '
                    'as down; its devices are not bound while it is down.'),
    cfg.IntOpt('workers',
               default=8, min=1,
               help='Threads of each conductor that complete long requests '
                    'after accepting them: bindings of accelerator requests '
                    '(taking a handle, asking the agent to program and '
                    'prepare it) and programming of deployables.'),
    cfg.FloatOpt('heartbeat_flush_interval',
                 default=1.0, min=0.05,
                 help='Seconds a conductor gathers heartbeats before writing '
                      'them to the database in one transaction. Larger '
                      'batches cost fewer writes; the health shown by the API '
                      'lags by up to this much.'),
    cfg.IntOpt('metrics_retention',
               default=3600, min=60,
               help='Seconds of per-device health and utilization history '
                    'kept; older readings are deleted as new ones arrive.'),
    cfg.IntOpt('agent_timeout',
               default=600, min=1,
               help='Seconds the conductor waits for an agent to prepare '
                    'an attach handle, programming a bitstream included, '
                    'before the binding fails.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
