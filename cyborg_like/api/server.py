"""The API's built-in HTTP server (cheroot, threaded)."""

import ipaddress
import threading

from cheroot import wsgi
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Connections the kernel may queue before they are accepted (capped by
# net.core.somaxconn). cheroot's default of 5 made bursts of a few dozen
# simultaneous clients fail with "Connection reset by peer"; 2048 is
# gunicorn's default.
BACKLOG = 2048


def check_exposure(conf):
    """Refuse to serve without authentication beyond loopback."""
    if conf.api.auth_strategy != 'noauth' or \
            conf.api.allow_noauth_on_public_address:
        return
    host = conf.api.host_ip
    if host == 'localhost' or ipaddress.ip_address(host).is_loopback:
        return
    raise SystemExit(
        'Refusing to serve the API on %s with [api] auth_strategy = noauth: '
        'anyone reaching it would be an admin. Use auth_strategy = keystone, '
        'listen on 127.0.0.1, or set [api] allow_noauth_on_public_address.'
        % host)


class APIServer:
    def __init__(self, application, host, port, threads):
        self._server = wsgi.Server((host, port), application,
                                   numthreads=threads,
                                   request_queue_size=BACKLOG,
                                   server_name='cyborg-like-api')
        self._thread = None

    @property
    def port(self):
        """The bound port (useful when asked to listen on port 0)."""
        return self._server.bind_addr[1]

    def start(self):
        self._server.prepare()          # binds now, so errors surface here
        self._thread = threading.Thread(target=self._server.serve,
                                        name='api-server', daemon=True)
        self._thread.start()
        host, port = self._server.bind_addr[:2]
        LOG.info('API listening on http://%s:%s', host, port)

    def stop(self):
        self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
