"""[catalog]: the bitstream and firmware catalog (docs/catalog.md).

Read by the API (where uploads go, how big they may be), the conductor
(the URL it gives agents) and the agents (keystoneauth options with which
they download image data from the catalog API).
"""

from oslo_config import cfg

from cyborg_like.conf import keystone_client

GROUP = 'catalog'
_DEFAULTS = {'service_type': 'accelerator',
             'valid_interfaces': ['internal', 'public'], 'timeout': 300}

opts = [
    cfg.StrOpt('store',
               default='file',
               help='Where image data is kept: the name of a store in the '
                    'entry-point group cyborg_like.catalog.store ("file": '
                    'a directory, file_store_dir; "glance": OpenStack '
                    'Glance).'),
    cfg.StrOpt('file_store_dir',
               default='$state_path/images',
               help='Directory of the "file" store. Only API processes '
                    'read and write it: with several API processes on '
                    'different hosts it must be one shared directory '
                    '(e.g. NFS) seen by all of them. Conductors and '
                    'agents never open it.'),
    cfg.IntOpt('max_image_size',
               default=2 * 1024 ** 3, min=1,
               help='Largest image, in bytes, an upload may carry; a '
                    'larger one is refused with 413 and nothing of it is '
                    'kept.'),
    cfg.StrOpt('download_endpoint',
               help='Base URL of the API (e.g. http://controller:6666) '
                    'from which agents download image data (GET '
                    '/v2/bitstreams/<uuid>/data), given to them by the '
                    'conductor when the store has no URL of its own. '
                    'Defaults to [api] public_endpoint, else '
                    'http://<[api] host_ip>:<[api] port>.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)
    # Agents authenticate their downloads with these (auth_type unset:
    # no token, as with the all-in-one's noauth API).
    keystone_client.register(conf, GROUP, _DEFAULTS)


def list_opts():
    return {GROUP: opts + keystone_client.list_opts(_DEFAULTS)}
