from oslo_config import cfg

GROUP = 'upgrade_levels'

opts = [
    cfg.StrOpt('conductor',
               help='Highest version of the conductor RPC API this process '
                    'may send, e.g. "1.0". Set it to the version of the '
                    'oldest conductor during a rolling upgrade; unset means '
                    'the newest this process knows.'),
    cfg.StrOpt('agent',
               help='Highest version of the agent RPC API this process may '
                    'send, e.g. "1.0". Set it to the version of the oldest '
                    'agent during a rolling upgrade; unset means the newest '
                    'this process knows.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
