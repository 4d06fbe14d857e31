"""Running cyborg_like as real processes on real infrastructure.

Every test run makes its own RabbitMQ vhost, MariaDB database and PostgreSQL
database, with unique names, and removes them at the end. The services are
the console scripts of the virtualenv, started as separate OS processes with
their logs in files under the test's temporary directory; the logs are added
to the report of any test that fails. The machinery is the shared harness
(harness/); this module holds what the integration tests add to it.

A service that cannot be reached makes the fixtures *fail*, never skip: these
tests exist to prove the system works on real infrastructure.
"""

import contextlib
import datetime
import os

import requests
import sqlalchemy as sa
import yaml

from harness import cloud
from harness.infra import BACKENDS  # noqa: F401
from harness.infra import DB_URLS  # noqa: F401
from harness.infra import RABBIT_HOST  # noqa: F401
from harness.infra import RABBIT_PORT  # noqa: F401
from harness.infra import free_port  # noqa: F401
from harness.infra import fresh_database
from harness.infra import rabbitmq_vhost
from harness.infra import wait_for
from harness.process import LOG_TAIL_LINES  # noqa: F401
from harness.process import STOP_TIMEOUT  # noqa: F401

BIN = cloud.BIN

# Short intervals keep the suite fast; the timeouts bound every wait.
CONDUCTOR_TIMEOUT = 2.0
DISCOVERY_INTERVAL = 1
HEARTBEAT_INTERVAL = 1
WAIT_TIMEOUT = 30.0
# Liveness within seconds, for the fault tests (extra_config=LIVENESS). A
# killed conductor's work is failed within service_down_after plus one
# sweep (CONDUCTOR_DESIGN); a dead host's within host_down_after plus one
# sweep (HOST_DESIGN). The tests fail past CEILING_FACTOR times that, a
# ceiling a loaded 2-core machine stays under (slow is not wrong: CI runs
# this suite beside the unit tests; 15 s was once passed at three times),
# and print what they measured. Without the sweeps nothing would fail the
# work before agent_timeout (120 s).
LIVENESS = """
[conductor]
service_heartbeat_interval = 1
service_down_after = 3
host_down_after = 4
agent_timeout = 120
"""
CONDUCTOR_DESIGN = 3 + 1
HOST_DESIGN = 4 + 1
CEILING_FACTOR = 5
CONDUCTOR_BOUND = CEILING_FACTOR * CONDUCTOR_DESIGN
HOST_BOUND = CEILING_FACTOR * HOST_DESIGN

JSON_HEADERS = {'Content-Type': 'application/json',
                'Accept': 'application/json',
                'OpenStack-API-Version': 'accelerator latest'}

# The inventory the fake driver of every deployment starts with.
BASE_INVENTORY = {'devices': [
    {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC Arria 10 GX',
     'pci_address': '0000:5e:00.0',
     'std_board_info': {'device_id': '0x09c4', 'class': 'Fuzzy FPGA'},
     'vendor_board_info': {'shell': 'it-shell-0'},
     'deployables': [
         {'name': 'region0', 'bitstream_id': None,
          'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                         'trait1': 'CUSTOM_FPGA_REGION_0'},
          'pci_functions': ['0000:5e:00.1']},
         {'name': 'region1',
          'bitstream_id': '0a1b2c3d-0000-4000-8000-00000000000e',
          'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                         'trait1': 'CUSTOM_FPGA_REGION_1'},
          'pci_functions': ['0000:5e:00.2', '0000:5e:00.3']}]},
    {'type': 'GPU', 'vendor': '0x10de', 'model': 'Tesla T4',
     'pci_address': '0000:af:00.0',
     'std_board_info': {'device_id': '0x1eb8', 'class': '0x030200'},
     'deployables': [
         {'name': 'gpu0',
          'attributes': {'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA'},
          'pci_functions': ['0000:af:00.0']}]},
]}


class Deployment(cloud.Cloud):
    """Conductor, agent and API of one test run, on one database backend.

    Optional: ``conductors`` > 1 starts more conductor processes (services
    ``conductor2``, ``conductor3``, ... each with its own ``[DEFAULT] host``)
    on the same vhost and database; ``inventory`` replaces BASE_INVENTORY;
    ``extra_config`` is configuration text every service reads after the
    shared file (so it overrides it, e.g. a longer [api] conductor_timeout);
    ``agent_config`` is extra configuration text read by the agent only
    (after the shared file, so it overrides it); ``agent_wrapper`` is an
    argv prefix the agent runs under (e.g. ``['umockdev-wrapper']``) and
    ``agent_env`` extra environment variables of the agent process;
    ``service_config`` maps other service names (``conductor2``, ``api``)
    to configuration text that service alone reads last.
    """

    def __init__(self, backend, workdir, transport_url, db_url,
                 conductors=1, inventory=None, extra_config=None,
                 agent_config=None, agent_wrapper=(), agent_env=None,
                 service_config=None):
        self.backend = backend
        self.inventory_file = os.path.join(workdir, 'inventory.yaml')
        self.write_inventory(BASE_INVENTORY if inventory is None
                             else inventory)
        super().__init__(
            workdir, transport_url, db_url,
            host='it-host-%s' % os.urandom(4).hex(),
            config={
                'api': {'conductor_timeout': CONDUCTOR_TIMEOUT},
                'agent': {'enabled_drivers': 'fake',
                          'discovery_interval': DISCOVERY_INTERVAL,
                          'heartbeat_interval': HEARTBEAT_INTERVAL,
                          'report_timeout': CONDUCTOR_TIMEOUT},
                'conductor': {'host_down_after': 30},
                'fake_driver': {'inventory_file': self.inventory_file}},
            extra_config=extra_config,
            service_config=dict(service_config or {}, **(
                {'agent': agent_config} if agent_config else {})) or None,
            conductors=conductors, agent_wrapper=agent_wrapper,
            agent_env=agent_env)

    # -- what the tests use

    def write_inventory(self, document):
        # Written aside and renamed, so the agent never reads half a file.
        tmp = self.inventory_file + '.tmp'
        with open(tmp, 'w') as f:
            yaml.safe_dump(document, f)
        os.replace(tmp, self.inventory_file)

    def get(self, path, timeout=WAIT_TIMEOUT, **kwargs):
        kwargs.setdefault('headers', {
            'OpenStack-API-Version': 'accelerator latest'})
        return requests.get(self.api_url + path, timeout=timeout, **kwargs)

    def call(self, method, path, body=None, expected=200, timeout=60):
        """A JSON request at the latest microversion; asserts the status
        is ``expected`` and returns the response."""
        resp = requests.request(method, self.api_url + path, json=body,
                                headers=JSON_HEADERS, timeout=timeout)
        assert resp.status_code == expected, (method, path,
                                              resp.status_code, resp.text)
        return resp

    def list_ok(self, resource):
        """GET /v2/<resource>; asserts 200 and returns the items."""
        resp = self.get('/v2/%s' % resource)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        return resp.json()[resource]

    def wait_for_devices(self, predicate, message):
        def check():
            devices = self.list_ok('devices')
            return devices if predicate(devices) else None
        return wait_for(check, message=message)

    def host_row(self):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT hostname, last_heartbeat, agent_version, '
                'inventory_hash FROM hosts WHERE hostname = :h'),
                {'h': self.host}).mappings().first()

    def wait_host_up(self, timeout=WAIT_TIMEOUT):
        """Until the agent's heartbeat is in the hosts table (binds need
        the host up); returns the row."""
        return wait_for(
            lambda: (lambda row: row if row and row['last_heartbeat']
                     else None)(self.host_row()),
            timeout=timeout,
            message='No heartbeat of %s in the hosts table' % self.host)

    def owner(self, table, uuid):
        """The name of the conductor service that carries the row of
        ``table`` (a binding, an operation, a rollout); None if none."""
        with self.engine.connect() as conn:
            host = conn.execute(sa.text(
                'SELECT c.hostname FROM %s w JOIN conductors c '
                'ON c.uuid = w.conductor_uuid WHERE w.uuid = :u' % table),
                {'u': uuid}).scalar()
        return next((name for name, h in self.conductor_hosts.items()
                     if h == host), None)

    def print_logs(self, stream=None):
        super().print_logs(stream, ' (%s)' % self.backend)


def all_devices(devices):
    """A ``wait_for_devices`` predicate: the API lists every device of
    BASE_INVENTORY."""
    return len(devices) == len(BASE_INVENTORY['devices'])


@contextlib.contextmanager
def started(dep, wait_for_devices=None):
    """``dep`` (a :class:`Deployment` or a subclass) migrated and started;
    with ``wait_for_devices`` (a predicate on the API's device list) until
    the API shows what it wants. Its logs go to stderr when it cannot
    start; it is stopped at the end.
    """
    try:
        try:
            dep.dbsync('upgrade')
            dep.start()
            if wait_for_devices is not None:
                dep.wait_for_devices(
                    wait_for_devices,
                    'The devices the agent should discover never '
                    'appeared through the API')
        except BaseException:
            dep.print_logs()
            raise
        yield dep
    finally:
        dep.close()


@contextlib.contextmanager
def running_deployment(backend, workdir, wait_for_devices=None, **kwargs):
    """A :class:`Deployment` (``kwargs``) on a fresh vhost and database,
    brought up by :func:`started` (with ``wait_for_devices``); everything
    is removed at the end.
    """
    with rabbitmq_vhost() as transport_url, \
            fresh_database(backend) as db_url, \
            started(Deployment(backend, workdir, transport_url, db_url,
                               **kwargs), wait_for_devices) as dep:
        yield dep


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
