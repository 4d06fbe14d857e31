"""A real OpenStack Placement (from PyPI) for the Placement sync tests.

One gunicorn-served Placement on SQLite per test session, on a free port,
with ``noauth2``; each test starts from an empty provider list. The
conductor reaches it through keystoneauth's ``admin_token`` plugin
(endpoint + token ``admin``), which the ``noauth2`` middleware takes as an
admin.
"""

import os
import signal
import socket
import subprocess
import sys
import time

from keystoneauth1 import loading as ks_loading
import pytest
import requests

from cyborg_like.conf import CONF

MICROVERSION = 'placement 1.39'
TOKEN = 'admin'

# The admin_token plugin's options (endpoint, token) are registered when
# the plugin is loaded; tests set them before that.
CONF.register_opts(ks_loading.get_auth_plugin_conf_options('admin_token'),
                   group='placement')


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class PlacementServer:
    def __init__(self, workdir):
        self.workdir = workdir
        self.port = _free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.process = None
        # Every request Placement served, one line each (gunicorn's
        # "%(r)s" is the request line, e.g. "GET /path?query HTTP/1.1").
        self.access_log = os.path.join(workdir, 'access.log')
        with open(os.path.join(workdir, 'placement.conf'), 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n'
                    '[placement_database]\n'
                    'connection = sqlite:///%s/placement.sqlite\n'
                    'sync_on_startup = True\n' % workdir)

    def start(self, timeout=60):
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=self.workdir)
        log = open(os.path.join(self.workdir, 'placement.log'), 'ab')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '-w', '1',
             '--no-control-socket', '-b', '127.0.0.1:%d' % self.port,
             '--access-logfile', self.access_log,
             'placement.wsgi.api:application'],
            env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('Placement exited with %s; see %s' % (
                    self.process.returncode,
                    os.path.join(self.workdir, 'placement.log')))
            try:
                if self.request('GET', '/').status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError('Placement did not answer within %ss' % timeout)

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def request(self, method, path, body=None, expect=None):
        response = requests.request(
            method, self.url + path, json=body, timeout=30,
            headers={'x-auth-token': TOKEN,
                     'OpenStack-API-Version': MICROVERSION})
        if expect is not None:
            assert response.status_code == expect, (
                method, path, response.status_code, response.text)
        return response

    def served(self, method, path):
        """How many times Placement answered ``method path``."""
        line = '"%s %s HTTP/' % (method, path)
        with open(self.access_log) as log:
            return sum(line in entry for entry in log)

    def get(self, path):
        return self.request('GET', path, expect=200).json()

    def wipe(self):
        """Delete every provider, children before parents."""
        providers = self.get('/resource_providers')['resource_providers']
        while providers:
            parents = {p['parent_provider_uuid'] for p in providers}
            for p in providers:
                if p['uuid'] not in parents:
                    self.request('DELETE', '/resource_providers/%s'
                                 % p['uuid'], expect=204)
            providers = [p for p in providers if p['uuid'] in parents]


@pytest.fixture(scope='session')
def placement_server(tmp_path_factory):
    server = PlacementServer(str(tmp_path_factory.mktemp('placement')))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def placement(placement_server):
    if placement_server.process.poll() is not None:
        placement_server.start()
    placement_server.wipe()
    yield placement_server
    if placement_server.process.poll() is not None:
        placement_server.start()
