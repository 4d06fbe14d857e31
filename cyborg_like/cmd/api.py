"""cyborg-like-api: the REST API on the built-in threaded server."""

import sys

from cyborg_like.cmd import common
from cyborg_like.common import service


def main():
    common.without_sqlalchemy()
    from cyborg_like.api import app
    from cyborg_like.api import server
    conf = common.prepare(sys.argv[1:])
    server.check_exposure(conf)
    api = server.APIServer(app.setup_app(conf), conf.api.host_ip,
                           conf.api.port, conf.api.threads)
    service.run([api])
