"""With [api] auth_strategy = noauth every caller is an admin: the API must
only be reachable on loopback (unless [api] allow_noauth_on_public_address),
under the built-in server and under a foreign WSGI server alike."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests
import webob

from cyborg_like.api import server
from cyborg_like.conf import CONF

START_TIMEOUT = 60


@pytest.fixture
def noauth():
    CONF.set_override('auth_strategy', 'noauth', group='api')
    try:
        yield CONF
    finally:
        for name in ('auth_strategy', 'host_ip',
                     'allow_noauth_on_public_address'):
            CONF.clear_override(name, group='api')


def _public_address():
    """An address of this machine that is not loopback, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(('192.0.2.1', 9))     # no packet is sent
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if server.is_loopback(address) else address


# -- the built-in server ------------------------------------------------------

def test_host_names_are_resolved_not_a_value_error(noauth):
    noauth.set_override('host_ip', 'localhost', group='api')
    server.check_exposure(noauth)
    for name in ('no-such-host.invalid', '0.0.0.0', '::'):
        noauth.set_override('host_ip', name, group='api')
        with pytest.raises(SystemExit, match='Refusing to serve the API on '
                                             + name):
            server.check_exposure(noauth)


def test_names_and_addresses():
    assert server.is_loopback('127.0.0.1')
    assert server.is_loopback('127.3.4.5')
    assert server.is_loopback('::1')
    assert server.is_loopback('::ffff:127.0.0.1')
    assert server.is_loopback('localhost')
    assert not server.is_loopback('0.0.0.0')
    assert not server.is_loopback('::')
    assert not server.is_loopback('192.0.2.2')
    assert not server.is_loopback('no-such-host.invalid')


def _app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'served']


def test_the_server_checks_the_address_it_bound():
    api = server.APIServer(_app, '0.0.0.0', 0, 1, loopback_only=True)
    with pytest.raises(SystemExit, match='Refusing to serve the API on '
                                         '0.0.0.0'):
        api.start()
    # Nothing is left listening.
    with pytest.raises(requests.ConnectionError):
        requests.get('http://127.0.0.1:%d/' % api.port, timeout=5)


@pytest.mark.parametrize('host', ['127.0.0.1', 'localhost'])
def test_the_server_serves_on_loopback(host):
    api = server.APIServer(_app, host, 0, 1, loopback_only=True)
    api.start()
    try:
        assert server.is_loopback(api.bound_address())
        answer = requests.get('http://%s:%d/' % (api.bound_address(),
                                                 api.port), timeout=5)
        assert answer.text == 'served'
    finally:
        api.stop()


def test_without_the_guard_any_address_is_bound():
    api = server.APIServer(_app, '0.0.0.0', 0, 1)
    api.start()
    api.stop()


# -- foreign WSGI servers: per request ----------------------------------------

def _call(environ):
    request = webob.Request.blank('/v2/device_profiles', method='POST',
                                  environ=environ)
    return request.get_response(server.LoopbackOnly(_app))


def test_per_request_the_local_address_decides():
    assert _call({'SERVER_ADDR': '127.0.0.1'}).text == 'served'
    assert _call({'SERVER_ADDR': '::1'}).text == 'served'
    for environ in ({'SERVER_ADDR': '192.0.2.2'},
                    # Client-controlled: the Host header and the peer.
                    {'SERVER_NAME': 'localhost'},
                    {'REMOTE_ADDR': '127.0.0.1', 'SERVER_NAME': '127.0.0.1'},
                    {}):
        refused = _call(environ)
        assert refused.status_int == 403, environ
        assert 'noauth' in refused.json['error_message']


class Gunicorn:
    """cyborg_like.api.wsgi:application under a real gunicorn."""

    def __init__(self, workdir, binds, extra_conf=''):
        self.workdir, self.binds = workdir, binds
        conf = os.path.join(workdir, 'cyborg_like.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = fake:/\nstate_path = %s\n'
                    '[api]\nauth_strategy = noauth\n%s'
                    % (workdir, extra_conf))
        self.env = dict(os.environ, CYBORG_LIKE_CONFIG_FILES=conf)
        self.log = os.path.join(workdir, 'gunicorn.log')
        self.process = None

    def start(self):
        command = [sys.executable, '-m', 'gunicorn', '-w', '1',
                   '--no-control-socket']
        for host, port in self.binds:
            command += ['-b', '%s:%d' % (host, port)]
        with open(self.log, 'ab') as log:
            self.process = subprocess.Popen(
                command + ['cyborg_like.api.wsgi:application'],
                env=self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self._log_text()
            try:
                host, port = self.binds[0]
                # Any answer (200, or 403 beyond loopback) means ready.
                requests.get(self.url(host.replace('0.0.0.0', '127.0.0.1'),
                                      port) + '/', timeout=5)
                return self
            except (requests.ConnectionError, requests.Timeout):
                # Not listening yet, or its worker still loading the app
                # (a busy machine): asked again until START_TIMEOUT.
                time.sleep(0.2)
        raise AssertionError('gunicorn did not answer: ' + self._log_text())

    def _log_text(self):
        with open(self.log, errors='replace') as f:
            return f.read()[-4000:]

    @staticmethod
    def url(host, port):
        return 'http://%s:%d' % (host, port)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(30)


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@pytest.fixture
def public_address():
    address = _public_address()
    if address is None:
        pytest.fail('this machine has no address other than loopback to '
                    'test on')
    return address


def test_gunicorn_refuses_noauth_beyond_loopback(tmp_path, public_address):
    """gunicorn on 0.0.0.0, as in the report: what decides is the address
    each connection reached, not the bind address nor the Host header."""
    port = _free_port('0.0.0.0')
    guarded = Gunicorn(str(tmp_path), [('0.0.0.0', port)]).start()
    try:
        assert requests.get(guarded.url('127.0.0.1', port) + '/',
                            timeout=30).status_code == 200
        # The anonymous write of the report, through the public address.
        write = requests.post(
            guarded.url(public_address, port) + '/v2/device_profiles',
            json={'name': 'x', 'groups': [{'resources:FPGA': '1'}]},
            timeout=30)
        assert write.status_code == 403, write.text
        assert 'noauth' in write.json()['error_message']
        # A Host header naming loopback does not help.
        spoofed = requests.get(guarded.url(public_address, port) + '/',
                               timeout=30,
                               headers={'Host': '127.0.0.1:%d' % port})
        assert spoofed.status_code == 403
    finally:
        guarded.stop()


def test_gunicorn_on_a_public_address_when_allowed(tmp_path,
                                                   public_address):
    public = (public_address, _free_port(public_address))
    allowed = Gunicorn(str(tmp_path), [public],
                       '[api]\nallow_noauth_on_public_address = true\n')
    # The option is in the [api] group written above; a second [api]
    # section adds to it.
    allowed.start()
    try:
        assert requests.get(allowed.url(*public) + '/',
                            timeout=30).status_code == 200
    finally:
        allowed.stop()
