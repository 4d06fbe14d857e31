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
    cfg.StrOpt('site',
               help='The site (region, data centre) this deployment '
                    'serves, as the availability feed labels its '
                    'accelerators, so that an orchestrator merging the '
                    'feeds of several deployments tells them apart. Unset: '
                    'no label.'),
    cfg.StrOpt('state_path',
               default=os.path.join(os.path.expanduser('~'), '.cyborg_like'),
               sample_default='$HOME/.cyborg_like',
               help='Directory where cyborg_like keeps state: the SQLite '
                    'database of the all-in-one, ansible-runner artifacts, '
                    'downloaded bitstreams.'),
    cfg.IntOpt('rpc_publish_retries',
               default=2, min=-1,
               help='How many times a call to the conductor or to an agent '
                    'retries sending its message while the message broker '
                    'cannot be reached, before it fails (-1: retry '
                    'forever). The caller\'s answer is bounded by its own '
                    'timeout anyway ([api] conductor_timeout, [agent] '
                    'report_timeout); this bounds how long a thread keeps '
                    'trying to send a message its caller gave up on. The '
                    'pause between retries is [oslo_messaging_rabbit] '
                    'rabbit_retry_interval and kombu_reconnect_delay.'),
    cfg.FloatOpt('rpc_commit_margin',
                 default=1.0, min=0.0,
                 help='Seconds past the deadline of a write\'s call to '
                      'the conductor that the API waits, when no answer '
                      'came, before it answers 503. A conductor commits '
                      'no write of a call past its deadline, so the 503 '
                      'then means that nothing was written; this margin '
                      'covers the commit itself and the difference '
                      'between the clocks of the API\'s and the '
                      'conductor\'s hosts (keep them in sync with NTP). '
                      'A conductor logs an error for a write it committed '
                      'later than this past its deadline.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
