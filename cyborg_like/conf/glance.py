"""[glance]: how the catalog's ``glance`` store reaches OpenStack Glance.

keystoneauth options as for any peer service (see keystone_client.py). Read
by the processes that use the store: the API (uploads, downloads, deletes)
and the conductor. Images are created in the project of these credentials.
"""

from oslo_config import cfg

from cyborg_like.conf import keystone_client

GROUP = 'glance'
# Uploads and downloads of large images stream through one request each:
# ``timeout`` bounds the wait for each read, not the whole transfer.
_DEFAULTS = {'service_type': 'image',
             'valid_interfaces': ['internal', 'public'], 'timeout': 60}

opts = [
    cfg.StrOpt('visibility',
               default='private',
               choices=['private', 'shared', 'community', 'public'],
               help='Glance visibility of the images the catalog creates. '
                    '"private": only the project of [glance] credentials '
                    '(and Glance admins) see them; the catalog API stays '
                    'the way users reach them.'),
    cfg.StrOpt('disk_format',
               default='raw',
               help='disk_format given to Glance for FPGA images (Glance '
                    'knows no FPGA format; "raw" is an opaque blob).'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)
    keystone_client.register(conf, GROUP, _DEFAULTS)


def list_opts():
    return {GROUP: opts + keystone_client.list_opts(_DEFAULTS)}
