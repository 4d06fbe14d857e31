"""[placement]: how the conductor reaches OpenStack Placement.

keystoneauth options as for any peer service (see keystone_client.py).
Without ``auth_type`` the conductor does not sync Placement at all.
"""

from oslo_config import cfg

from cyborg_like.conf import keystone_client

GROUP = 'placement'
# A request may take ``timeout`` seconds: a hung Placement must not stall
# the sync thread for ever.
_DEFAULTS = {'service_type': 'placement',
             'valid_interfaces': ['internal', 'public'], 'timeout': 30}

opts = [
    cfg.IntOpt('sync_interval',
               default=60, min=1,
               help='Seconds between two runs of the conductor\'s Placement '
                    'sync. Each run brings Placement in line with the hosts '
                    'whose devices changed (inventory, status, health) '
                    'since their last successful sync; a run that could '
                    'not reach Placement leaves them marked, and the next '
                    'run tries again. The first run after a conductor '
                    'starts checks every host no conductor synced within '
                    'this interval; a conductor claims a host while it '
                    'syncs it, for this long at most, so conductors share '
                    'the work. Only used when [placement] auth_type is '
                    'set.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)
    keystone_client.register(conf, GROUP, _DEFAULTS)


def list_opts():
    return {GROUP: opts + keystone_client.list_opts(_DEFAULTS)}
