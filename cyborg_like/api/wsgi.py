"""``cyborg_like.api.wsgi:application`` for uWSGI, gunicorn or mod_wsgi.

The configuration files come from ``CYBORG_LIKE_CONFIG_FILES`` (comma
separated), else /etc/cyborg_like/cyborg_like.conf.

With ``[api] auth_strategy = noauth`` (and without
``allow_noauth_on_public_address``) requests that reach the server on an
address other than loopback are refused (403): the server's bind address is
not known here, so it is checked per request (server.LoopbackOnly).
"""

import os

from cyborg_like.cmd import common


def init_application():
    files = os.environ.get('CYBORG_LIKE_CONFIG_FILES',
                           '/etc/cyborg_like/cyborg_like.conf')
    conf = common.prepare([], config_files=files.split(','))
    from cyborg_like.api import app
    from cyborg_like.api import server
    application = app.setup_app(conf)
    if server.noauth_must_stay_local(conf):
        application = server.LoopbackOnly(application)
    return application


application = init_application()
