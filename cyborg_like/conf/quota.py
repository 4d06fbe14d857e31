"""[quota]: how many accelerators each project may hold."""

from oslo_config import cfg

GROUP = 'quota'

opts = [
    cfg.StrOpt('driver',
               default='local',
               choices=[('local', 'Limits from [quota] default_limits, '
                                  'which a project\'s own limits (set by '
                                  'an admin: PUT /v2/quotas/<project>, '
                                  '"cyborg-like quota set") override.'),
                        ('unified_limits', 'Limits from Keystone (registered '
                                           'and per-project limits named '
                                           '"class:<RESOURCE CLASS>") '
                                           'through oslo.limit; see '
                                           '[oslo_limit]. As in Nova, a '
                                           'class without a registered '
                                           'limit gets 0: register one for '
                                           'every class offered.')],
               help='Where per-project accelerator limits come from.'),
    cfg.DictOpt('default_limits',
                default={},
                help='With the local driver: the most accelerators of each '
                     'resource class a project may request, e.g. '
                     '"FPGA:8,PGPU:4,CUSTOM_MIG_1G_10GB:14", unless the '
                     'project has a limit of its own for that class (PUT '
                     '/v2/quotas/<project>). A resource class not listed is '
                     'unlimited.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
