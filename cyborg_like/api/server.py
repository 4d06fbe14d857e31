"""The API's built-in HTTP server (cheroot, threaded), and the guards that
keep an API without authentication ([api] auth_strategy = noauth) on
loopback, whichever server runs it."""

import ipaddress
import socket
import threading

from cheroot import wsgi
from oslo_log import log as logging

from cyborg_like.api import errors

LOG = logging.getLogger(__name__)

# Connections the kernel may queue before they are accepted (capped by
# net.core.somaxconn). cheroot's default of 5 made bursts of a few dozen
# simultaneous clients fail with "Connection reset by peer"; 2048 is
# gunicorn's default.
BACKLOG = 2048

REFUSAL = ('Refusing to serve the API on %s with [api] auth_strategy = '
           'noauth: anyone reaching it would be an admin. Use auth_strategy '
           '= keystone, listen on 127.0.0.1, or set [api] '
           'allow_noauth_on_public_address.')


def noauth_must_stay_local(conf):
    """Whether the API may only be reachable on loopback."""
    return (conf.api.auth_strategy == 'noauth'
            and not conf.api.allow_noauth_on_public_address)


def is_loopback(address):
    """True for a loopback IP address (v4, v6, v4-mapped v6); a name is
    resolved and must give loopback addresses only; False when it does not
    resolve."""
    try:
        ip = ipaddress.ip_address(address.split('%')[0])
    except ValueError:
        return _resolves_to_loopback_only(address)
    if getattr(ip, 'ipv4_mapped', None) is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _resolves_to_loopback_only(name):
    try:
        found = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return False
    addresses = {info[4][0] for info in found}
    # An address of a resolved name is an IP address: no recursion loop.
    return bool(addresses) and all(
        ipaddress.ip_address(a.split('%')[0]).is_loopback for a in addresses)


def check_exposure(conf):
    """Refuse early, before anything starts, when [api] host_ip is not
    loopback; the server checks again what it actually bound."""
    if noauth_must_stay_local(conf) and not is_loopback(conf.api.host_ip):
        raise SystemExit(REFUSAL % conf.api.host_ip)


class APIServer:
    def __init__(self, application, host, port, threads,
                 loopback_only=False):
        """``loopback_only``: refuse to serve (SystemExit from start) when
        the bound address is not loopback."""
        self._server = wsgi.Server((host, port), application,
                                   numthreads=threads,
                                   request_queue_size=BACKLOG,
                                   server_name='cyborg-like-api')
        self._loopback_only = loopback_only
        self._thread = None

    @property
    def port(self):
        """The bound port (useful when asked to listen on port 0)."""
        return self._server.bind_addr[1]

    def bound_address(self):
        """The IP address the listening socket is bound to."""
        return self._server.socket.getsockname()[0]

    def start(self):
        self._server.prepare()          # binds now, so errors surface here
        if self._loopback_only and not is_loopback(self.bound_address()):
            address = self.bound_address()
            self._server.stop()
            raise SystemExit(REFUSAL % address)
        self._thread = threading.Thread(target=self._server.serve,
                                        name='api-server', daemon=True)
        self._thread.start()
        host, port = self._server.bind_addr[:2]
        LOG.info('API listening on http://%s:%s', host, port)

    def stop(self):
        self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)


class LoopbackOnly:
    """WSGI middleware for foreign servers (gunicorn, uWSGI, mod_wsgi),
    whose bind address is unknown when the application is loaded: with
    noauth, a request is served only if it reached the server on a
    loopback address, else answered 403.

    The local address of the connection is taken from what the server
    knows, never from the client: gunicorn's connection socket
    (``gunicorn.socket``), else ``SERVER_ADDR`` (set by mod_wsgi from the
    connection, and by nginx's uwsgi_params from $server_addr). Not
    SERVER_NAME (gunicorn and others take it from the Host header) nor
    REMOTE_ADDR (the peer; a local proxy would make every client look
    local). When neither is known the request is refused.
    """

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        address = local_address(environ)
        if address is not None and is_loopback(address):
            return self.application(environ, start_response)
        LOG.warning('Refused a request that reached the API on %s: '
                    'auth_strategy = noauth serves loopback only.',
                    address or 'an unknown address')
        refusal = errors.response(
            403, 'This API has no authentication ([api] auth_strategy = '
                 'noauth) and answers only on a loopback address.',
            code='accel.noauth.not_local')
        return refusal(environ, start_response)


def local_address(environ):
    """The server-side IP address of the request's connection, or None."""
    sock = environ.get('gunicorn.socket')
    if sock is not None:
        try:
            name = sock.getsockname()
        except OSError:
            return None
        # A UNIX socket has a path (or '') for a name: only a local
        # process can reach it.
        return name[0] if isinstance(name, tuple) else '127.0.0.1'
    return environ.get('SERVER_ADDR') or None
