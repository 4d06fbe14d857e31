"""``cyborg_like.api.wsgi:application`` for uWSGI, gunicorn or mod_wsgi.

The configuration files come from ``CYBORG_LIKE_CONFIG_FILES`` (comma
separated), else /etc/cyborg_like/cyborg_like.conf.
"""

import os

from cyborg_like.cmd import common


def init_application():
    common.without_sqlalchemy()
    files = os.environ.get('CYBORG_LIKE_CONFIG_FILES',
                           '/etc/cyborg_like/cyborg_like.conf')
    conf = common.prepare([], config_files=files.split(','))
    from cyborg_like.api import app
    return app.setup_app(conf)


application = init_application()
