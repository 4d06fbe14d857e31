"""The whole service in one process, for functional and gabbi tests.

SQLite in a temporary directory, the in-memory ``fake:/`` transport, a real
conductor and a real agent (fake driver) on their RPC servers, and the real
WSGI app. Nothing of ours is mocked: only the hardware is a YAML file.
"""

import atexit
import json
import os
import shutil
import socketserver
import tempfile
import threading
import time
from wsgiref import simple_server

import webob
import yaml

from cyborg_like.agent import service as agent_service
from cyborg_like.api import app
from cyborg_like.api import read_model
from cyborg_like.common import context
from cyborg_like.common import read_model as contract
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi
from cyborg_like.conductor import service as conductor_service
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import generations
from cyborg_like.db import migration
from harness import cloud as harness_cloud

HOST = 'compute-1.example.org'
INVENTORY = os.path.join(os.path.dirname(__file__), 'inventory.yaml')
CATALOG_INVENTORY = os.path.join(os.path.dirname(__file__),
                                 'inventory-catalog.yaml')
# Bitstreams the agent can program; the fake driver fails on "FAIL".
BITSTREAMS = {
    'bs-crypto-1': 'GBS fake crypto accelerator\n',
    'bs-broken': 'FAIL PR interface id mismatch: region expects 9346116d\n',
}
# What the API's read model serves (cyborg_like/api/read_model/).
# What the read model serves, and ARQs, whose answers it keeps.
READ_MODEL_PATHS = ('/v2/devices', '/v2/deployables', '/v2/attributes',
                    '/v2/device_profiles')
ARQ_PATHS = ('/v2/accelerator_requests',)


def inventory_copy(directory):
    """A copy of the fake inventory in ``directory`` (a pathlib.Path) that
    a test may change with ``rewrite_inventory``."""
    path = directory / 'inventory.yaml'
    shutil.copy(INVENTORY, path)
    return path


def rewrite_inventory(path, change):
    """``change(devices)`` edits the inventory's device list in place."""
    document = yaml.safe_load(path.read_text())
    change(document['devices'])
    path.write_text(yaml.safe_dump(document))


def installed_drivers(directory, monkeypatch):
    """The fake driver's view of installed drivers, NVIDIA 1.0 to start,
    in ``directory``/drivers; the agent's playbooks find it in their
    environment."""
    state = directory / 'drivers'
    state.mkdir()
    (state / 'nvidia.version').write_text('1.0\n')
    monkeypatch.setenv('CYBORG_LIKE_TEST_DRIVERS', str(state))
    return state


def nvidia_family_inventory(directory):
    """A copy of the fake inventory in ``directory`` whose NVIDIA GPUs the
    "nvidia" driver family drives (its stand-in playbooks)."""
    def nvidia_family(devices):
        for device in devices:
            if device['vendor'] == '0x10de':
                device['driver_family'] = 'nvidia'
    path = inventory_copy(directory)
    rewrite_inventory(path, nvidia_family)
    return path


def catalog_cloud(directory):
    """A cloud (not started) whose regions offer PR interfaces and whose
    agent fetches images from the API over HTTP, as on a host."""
    return Cloud(inventory_file=CATALOG_INVENTORY, http=True, overrides={
        ('conductor', 'firmware_timeout'): 30,
        ('agent', 'image_cache_dir'): str(directory / 'cache')})


_MIGRATED = None


def _migrated_database():
    """A database file at the migrations' head, made once per process:
    each cloud starts from a copy. The migrations cost little CPU, but a
    second or more of wall time in SQLite's commits (tests of the
    migrations themselves make their own databases)."""
    global _MIGRATED
    if _MIGRATED is None:
        directory = tempfile.mkdtemp(prefix='cyborg_like-migrated-')
        atexit.register(shutil.rmtree, directory, True)
        path = os.path.join(directory, 'db.sqlite')
        CONF.set_override('connection', 'sqlite:///%s' % path,
                          group='database')
        try:
            db_api.dispose()
            migration.upgrade()
        finally:
            db_api.dispose()
            CONF.clear_override('connection', group='database')
        _MIGRATED = path
    return _MIGRATED


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class _ThreadingServer(socketserver.ThreadingMixIn,
                       simple_server.WSGIServer):
    daemon_threads = True


class Cloud:
    def __init__(self, inventory_file=INVENTORY, overrides=None,
                 http=False, placement_sync_by_hand=False):
        """``overrides`` maps (group, option) to a value; ``http``: also
        serve the app on a port of 127.0.0.1 (agents fetch catalog images
        from it); ``placement_sync_by_hand``: the conductor runs no
        periodic Placement sync, the test calls ``sync_now()`` (the
        periodic's first run, at once on start, would otherwise race the
        test's own on a loaded machine)."""
        self.inventory_file = inventory_file
        self.overrides = overrides or {}
        self.http = http
        self.placement_sync_by_hand = placement_sync_by_hand
        self._server = None
        self.services = []
        self._tmp = None

    def _override(self, name, value, group=None):
        CONF.set_override(name, value, group=group)
        self._set.append((name, group))

    def start(self):
        self._set = []
        self._tmp = tempfile.TemporaryDirectory(prefix='cyborg_like-')
        self._override('host', HOST)
        self._override('state_path', self._tmp.name)
        self._override('transport_url', 'inproc:/')
        database = os.path.join(self._tmp.name, 'db.sqlite')
        shutil.copy(_migrated_database(), database)
        self._override('connection', 'sqlite:///%s' % database,
                       group='database')
        self._override('auth_strategy', 'noauth', group='api')
        self._override('conductor_timeout', 10, group='api')
        self._override('heartbeat_flush_interval', 0.1, group='conductor')
        # A binding sent to a stopped agent fails in seconds, not in the
        # production default of ten minutes (which a stop would wait for).
        self._override('agent_timeout', 20, group='conductor')
        self._override('inventory_file', self.inventory_file,
                       group='fake_driver')
        bitstreams = os.path.join(self._tmp.name, 'bitstreams')
        os.makedirs(bitstreams)
        for name, content in BITSTREAMS.items():
            with open(os.path.join(bitstreams, name), 'w') as f:
                f.write(content)
        self._override('bitstream_dir', bitstreams, group='agent')
        # Never the real playbooks: they would change this machine.
        self._override('playbook_dir', harness_cloud.STAND_IN_PLAYBOOKS,
                       group='agent')
        for (group, name), value in self.overrides.items():
            self._override(name, value, group=group)
        db_api.dispose()
        rpc.init(CONF)
        self.conductor_api = rpcapi.ConductorAPI(timeout=10)
        self.services = [conductor_service.ConductorService(CONF),
                         agent_service.AgentService(CONF)]
        if self.placement_sync_by_hand:
            self.services[0].placement.start = lambda: None
        for service in self.services:
            service.start()
        # The conductor's periodic tasks run once at once: a test acting
        # before that run ends would race it (lease windows, Placement).
        self.wait_for(self.services[0].first_runs_done, timeout=60)
        self.app = app.setup_app(CONF, self.conductor_api)
        if self.http:
            self._serve()
        self.wait_for(lambda: self.list_devices())
        self.wait_for(lambda: [h for h in self.conductor_api.list_hosts(
            context.get_admin_context()) if h['state'] == 'up'])
        return self

    def _serve(self):
        self._server = simple_server.make_server(
            '127.0.0.1', 0, self.app, server_class=_ThreadingServer,
            handler_class=_QuietHandler)
        threading.Thread(target=self._server.serve_forever,
                         daemon=True).start()
        self.url = 'http://127.0.0.1:%d' % self._server.server_port
        self._override('download_endpoint', self.url, group='catalog')

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        read_model.stop_all()
        # As the all-in-one: the agent stops calling the conductor, the
        # conductor finishes its bindings (which need the agent), then the
        # agent stops.
        for service in self.services:
            getattr(service, 'quiesce', lambda: None)()
        for service in self.services:
            service.stop()
        self.services = []
        rpc.cleanup()
        db_api.dispose()
        for name, group in self._set:
            CONF.clear_override(name, group=group)
        self._tmp.cleanup()

    def call(self, method, path, body=None, headers=None):
        """One request to the app: (status, parsed body or None).

        A read of what the API's read model serves first waits for it to
        hold what the database holds: the tests also write through
        ``conductor_api`` (another client), whose writes a real API shows
        within its staleness bound only (docs/design.md;
        tests/functional/test_read_model.py tests the bound itself)."""
        if method in ('GET', 'HEAD') and path.startswith(READ_MODEL_PATHS):
            self.read_model_settled()
        elif method in ('GET', 'HEAD') and path.startswith(ARQ_PATHS):
            # Every change an ARQ answer shows moves the arqs generation;
            # the copies need not have caught up (a kept answer is not
            # used while one lags: it is asked for again).
            self.read_model_settled(only=(contract.ARQS,))
        request = webob.Request.blank(path, method=method,
                                      headers=headers or {})
        if body is not None:
            request.body = json.dumps(body).encode()
            request.content_type = 'application/json'
        response = request.get_response(self.app)
        return response.status_int, (response.json if response.body
                                     else None)

    @staticmethod
    def read_model_settled(timeout=5.0, only=None):
        # Not an assertion: with its conductor stopped the copy cannot
        # catch up, and the request then answers as it would (falls back,
        # or 503), which is what such a test looks at.
        if CONF.api.read_model:
            with db_api.reader() as session:
                wanted = generations.current(session)
            if only is not None:
                wanted = {name: wanted[name] for name in only}
            read_model.wait_for(wanted, timeout)

    def list_devices(self):
        return self.conductor_api.list_devices(
            context.get_admin_context(), {}, 1000, None, 'created_at', 'asc')

    @staticmethod
    def wait_for(predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = predicate()
            if result:
                return result
            time.sleep(0.05)
        raise AssertionError('condition not met within %ss' % timeout)
