"""cyborg-like-api: the REST API on the built-in threaded server."""

import sys

from cyborg_like.cmd import common
from cyborg_like.common import service


DESCRIPTION = ('The accelerator API (OpenStack Cyborg v2) on a built-in '
               'threaded server; it reaches data through the conductor.')

OPTIONS = (
    ('api', 'host_ip'), ('api', 'port'), ('api', 'threads'),
    ('api', 'auth_strategy'), (None, 'transport_url'),
    ('api', 'conductor_timeout'),
)


def main():
    from cyborg_like.api import app
    from cyborg_like.api import server
    conf = common.prepare(sys.argv[1:], description=DESCRIPTION,
                          options=OPTIONS)
    server.check_exposure(conf)
    api = server.APIServer(app.setup_app(conf), conf.api.host_ip,
                           conf.api.port, conf.api.threads,
                           loopback_only=server.noauth_must_stay_local(conf))
    service.run([api])
