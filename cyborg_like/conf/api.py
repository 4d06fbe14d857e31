from oslo_config import cfg

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
                 help='Seconds an API request waits for the conductor to '
                      'answer an RPC call before it answers 503.'),
    cfg.IntOpt('max_limit',
               default=1000, min=1,
               help='The most items one page of a list may hold; a larger '
                    '"limit" is cut to this.'),
    cfg.StrOpt('public_endpoint',
               help='Public URL of the API to use in links, when it is '
                    'served behind a proxy. Defaults to the URL of the '
                    'request.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
