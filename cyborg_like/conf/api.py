from oslo_config import cfg
from oslo_middleware import sizelimit

GROUP = 'api'

opts = [
    cfg.HostAddressOpt('host_ip',
                       default='127.0.0.1',
                       help='Address the API server listens on.'),
    cfg.PortOpt('port',
                default=6666,
                help='Port the API server listens on (Cyborg\'s port).'),
    cfg.IntOpt('threads',
               default=16, min=1,
               help='Worker threads of the built-in HTTP server of '
                    'cyborg-like-api. For several processes, serve '
                    'cyborg_like.api.wsgi:application with uWSGI or '
                    'gunicorn instead.'),
    cfg.StrOpt('auth_strategy',
               default='keystone',
               choices=[('keystone', 'Validate tokens with keystonemiddleware '
                                     'auth_token.'),
                        ('noauth', 'No authentication: every request is '
                                   'made as an admin. For the all-in-one and '
                                   'tests only.')],
               help='How API requests are authenticated.'),
    cfg.BoolOpt('allow_noauth_on_public_address',
                default=False,
                help='Let the API run with auth_strategy = noauth while '
                     'listening on an address other than loopback. Anyone '
                     'who reaches it is then an admin: only for isolated '
                     'test networks.'),
    cfg.FloatOpt('conductor_timeout',
                 default=30.0, min=0.1,
                 help='Longest time in seconds an API request waits for '
                      'the conductor, sending the message (with its '
                      'retries while the message broker is unreachable) '
                      'and waiting for the answer together, before it '
                      'answers 503. The request carries this deadline: a '
                      'conductor that gets it later drops it, so a '
                      'request answered 503 is not carried out afterwards '
                      '(hosts must keep their clocks in sync, e.g. NTP).'),
    cfg.FloatOpt('lost_answer_timeout',
                 default=0.0, min=0.0,
                 help='On a RabbitMQ cluster: longest time in seconds an '
                      'API request whose write got no answer (past '
                      'conductor_timeout and [DEFAULT] rpc_commit_margin) '
                      'keeps asking the conductors whether it was carried '
                      'out, and for its answer (kept in the change log), '
                      'before it answers 503: the answer may have been '
                      'lost with a broker node while the write was done '
                      '(docs/ha.md suggests 10). Read by the conductors '
                      'too: they keep each answer only when it is set. '
                      '0: never ask; the 503 '
                      'comes at once and the change log tells the client '
                      'later (one broker: a cut broker could not be asked '
                      'either).'),
    cfg.IntOpt('retry_after',
               default=5, min=0,
               help='Seconds a client is told to wait (the Retry-After '
                    'header of a 503) before it tries again when the '
                    'conductor or the message broker cannot be reached.'),
    cfg.FloatOpt('policy_reload_interval',
                 default=5.0, min=0,
                 help='Seconds between two looks for a changed policy file '
                      '([oslo_policy] policy_file, policy_dirs): a changed '
                      'rule applies within this long. Looking on every '
                      'check (0) costs about a dozen file system calls per '
                      'API request.'),
    cfg.IntOpt('max_limit',
               default=1000, min=1,
               help='The most items one page of a list may hold; a larger '
                    '"limit" is cut to this.'),
    cfg.IntOpt('max_accelerators_per_request',
               default=64, min=1, max=63936,
               help='The most accelerators one device profile may ask for '
                    '(the sum of its groups\' "resources:<class>" counts), '
                    'so the most accelerator requests one POST to '
                    '/v2/accelerator_requests creates. Checked when a '
                    'profile is created (400) and again when requests are '
                    'created from it, for profiles made before a lower '
                    'bound. One group may ask for at most 999.'),
    cfg.BoolOpt('read_model',
                default=True,
                help='Serve lists and shows of devices, deployables, '
                     'attributes and device profiles from a copy kept in '
                     'each API process (the read model), without a call '
                     'to the conductor. The copy is loaded with one call, '
                     'kept current by the conductors\' announcements of '
                     'the changes they commit, and used only while it is '
                     'known to be current: otherwise, and for every query '
                     'it cannot answer exactly as the database would, the '
                     'request goes to the conductor as without it. A '
                     'request answered from the copy carries an ETag '
                     '(If-None-Match then answers 304). Needs conductors '
                     'at RPC 1.17 ([upgrade_levels] conductor).'),
    cfg.FloatOpt('read_model_check_interval',
                 default=2.0, min=0.1,
                 help='Seconds between two confirmations of the read '
                      'model\'s generations with a conductor (one small '
                      'call per API process). Changes are announced as '
                      'they are committed; this bounds how long a lost '
                      'announcement can leave the copy behind, and the '
                      'copy is not used once no confirmation succeeded '
                      'for twice this long.'),
    cfg.IntOpt('read_model_arq_answers',
               default=4096, min=0,
               help='How many answers of the conductor to ARQ shows and '
                    'lists each API process keeps (least recently used '
                    'first out) while the read model knows nothing they '
                    'show changed: no ARQ, handle, device or profile '
                    'change announced, no write of this process since. '
                    'Nova\'s polling of an instance\'s ARQs and repeated '
                    'shows then cost no call to the conductor. 0 keeps '
                    'none. Used with [api] read_model and conductors at '
                    'RPC 1.20.'),
    cfg.StrOpt('public_endpoint',
               help='Public URL of the API to use in links, when it is '
                    'served behind a proxy. Defaults to the URL of the '
                    'request.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)
    # [oslo_middleware] max_request_body_size, read by the API's body
    # limit; registered here so it can be set before the app is made. The
    # sample shows it from the oslo.middleware.sizelimit namespace.
    conf.register_opts(sizelimit.OPTS, group='oslo_middleware')


def list_opts():
    return {GROUP: opts}
