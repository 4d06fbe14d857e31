"""The whole service in one process, for functional and gabbi tests.

SQLite in a temporary directory, the in-memory ``fake:/`` transport, a real
conductor and a real agent (fake driver) on their RPC servers, and the real
WSGI app. Nothing of ours is mocked: only the hardware is a YAML file.
"""

import os
import tempfile
import time

from cyborg_like.agent import service as agent_service
from cyborg_like.api import app
from cyborg_like.common import context
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi
from cyborg_like.conductor import service as conductor_service
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import migration

HOST = 'compute-1.example.org'
INVENTORY = os.path.join(os.path.dirname(__file__), 'inventory.yaml')
# Bitstreams the agent can program; the fake driver fails on "FAIL".
BITSTREAMS = {
    'bs-crypto-1': 'GBS fake crypto accelerator\n',
    'bs-broken': 'FAIL PR interface id mismatch: region expects 9346116d\n',
}

class Cloud:
    def __init__(self, inventory_file=INVENTORY, overrides=None):
        """``overrides`` maps (group, option) to a value."""
        self.inventory_file = inventory_file
        self.overrides = overrides or {}
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
        self._override('transport_url', 'fake:/')
        self._override('connection', 'sqlite:///%s/db.sqlite' % self._tmp.name,
                       group='database')
        self._override('auth_strategy', 'noauth', group='api')
        self._override('conductor_timeout', 10, group='api')
        self._override('heartbeat_flush_interval', 0.1, group='conductor')
        self._override('inventory_file', self.inventory_file,
                       group='fake_driver')
        bitstreams = os.path.join(self._tmp.name, 'bitstreams')
        os.makedirs(bitstreams)
        for name, content in BITSTREAMS.items():
            with open(os.path.join(bitstreams, name), 'w') as f:
                f.write(content)
        self._override('bitstream_dir', bitstreams, group='agent')
        for (group, name), value in self.overrides.items():
            self._override(name, value, group=group)
        db_api.dispose()
        migration.upgrade()
        rpc.init(CONF)
        self.conductor_api = rpcapi.ConductorAPI(timeout=10)
        self.services = [conductor_service.ConductorService(),
                         agent_service.AgentService()]
        for service in self.services:
            service.start()
        self.app = app.setup_app(CONF, self.conductor_api)
        self.wait_for(lambda: self.list_devices())
        self.wait_for(lambda: [h for h in self.conductor_api.list_hosts(
            context.get_admin_context()) if h['state'] == 'up'])
        return self

    def stop(self):
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
