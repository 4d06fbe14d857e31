"""[nova]: how the conductor tells Nova that bindings ended.

Without ``auth_type`` no event is sent (fine for clouds without Nova).
"""

from cyborg_like.conf import keystone_client

GROUP = 'nova'
# Telling Nova a binding ended is retried by keystoneauth itself: when Nova
# cannot be reached (connect_retries) and when it answers a transient 5xx
# (status_code_retries on retriable_status_codes), with exponential backoff
# unless a *_retry_delay is set.
_DEFAULTS = {'service_type': 'compute',
             'valid_interfaces': ['internal', 'public'], 'timeout': 30,
             'connect_retries': 5, 'status_code_retries': 5,
             'retriable_status_codes': [500, 502, 503, 504]}

opts = []


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)
    keystone_client.register(conf, GROUP, _DEFAULTS)


def list_opts():
    return {GROUP: opts + keystone_client.list_opts(_DEFAULTS)}
