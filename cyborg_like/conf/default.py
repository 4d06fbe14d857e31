import os
import socket

from oslo_config import cfg

opts = [
    cfg.StrOpt('host',
               default=socket.gethostname(),
               sample_default='<current_hostname>',
               help='Name of this host. The agent reports devices under this '
                    'name and listens for RPC addressed to it; it must match '
                    'the compute node name Nova and Placement use for the '
                    'host (usually the FQDN).'),
    cfg.StrOpt('state_path',
               default=os.path.join(os.path.expanduser('~'), '.cyborg_like'),
               sample_default='$HOME/.cyborg_like',
               help='Directory where cyborg_like keeps state: the SQLite '
                    'database of the all-in-one, ansible-runner artifacts, '
                    'downloaded bitstreams.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
