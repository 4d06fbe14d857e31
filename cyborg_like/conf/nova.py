"""[nova]: how the conductor tells Nova that bindings ended.

Without ``auth_type`` no event is sent (fine for clouds without Nova).
"""

from oslo_config import cfg

from cyborg_like.conf import keystone_client

GROUP = 'nova'
_DEFAULTS = {'service_type': 'compute',
             'valid_interfaces': ['internal', 'public'], 'timeout': 30}

opts = [
    cfg.IntOpt('event_retries',
               default=5, min=0,
               help='How many times the conductor retries telling Nova that '
                    'a binding ended when Nova answers with a transient '
                    'error (5xx) or cannot be reached.'),
    cfg.FloatOpt('event_retry_delay',
                 default=1.0, min=0,
                 help='Seconds before the first retry; each next retry '
                      'waits twice as long.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)
    keystone_client.register(conf, GROUP, _DEFAULTS)


def list_opts():
    return {GROUP: opts + keystone_client.list_opts(_DEFAULTS)}
