"""The real Nova (34.0.0, from PyPI) beside a cyborg_like deployment.

:func:`nova_cloud` brings up, for one test module:

* a real Placement (tests/placement/conftest.py's ``PlacementServer``,
  ``noauth2``; Nova and our conductor reach it with keystoneauth's
  ``admin_token`` plugin);
* cyborg_like as separate processes behind the session's Keystone (API,
  conductor, and one agent per compute host: the deployment's ``agent``
  and ``agent2``, each with its own ``[DEFAULT] host`` and a copy of the
  fake inventory ``INVENTORY``: BASE_INVENTORY and a GPU cut into vGPUs);
* Nova from its own virtualenv (tools/setup-nova-venv.sh): the API under
  gunicorn, conductor, scheduler and two nova-compute with the fake virt
  driver ``fake.FakeDriverWithoutFakeNodes``, named as our two agents'
  hosts, on three fresh MariaDB databases (API, cell0, cell1) and the
  RabbitMQ vhost of the deployment;
* a Neutron stand-in (:class:`NeutronStandIn`): Nova lists ports even for
  servers booted with ``networks: none``; it answers what Nova 34 asks
  then, and records every request.

Nova and cyborg_like find each other through the Keystone catalog only:
the ``compute`` service and endpoint are registered here, the
``accelerator`` one points at our API. Everything is stopped and dropped at
the end (SIGTERM to each process group, the databases, the vhost).
"""

import concurrent.futures
import contextlib
import copy
import http.server
import os
import threading

import requests
import sqlalchemy as sa

from harness import process
from harness.infra import HarnessError
from harness.infra import fresh_database
from harness.infra import rabbitmq_vhost
from harness.infra import run
from harness.infra import wait_for
from tests import json_http
from tests.placement.conftest import PlacementServer

from . import infra
from . import keystone as ks

ROOT = process.ROOT
VENV = os.path.join(ROOT, '.cache', 'nova-venv')
VENV_BIN = os.path.join(VENV, 'bin')
MICROVERSION = 'compute 2.90'
# How long nova-compute waits for accelerator-request-bound: short, so a
# missing event fails a test in a minute rather than five.
ARQ_BINDING_TIMEOUT = 40
START_TIMEOUT = 120.0
# A server reaches a stable status within this (a late bind included).
SERVER_TIMEOUT = 90.0
# A server in ERROR or gone, a check that failed: no use waiting on.
STOP_WAITING = (AssertionError, HarnessError)
# The GPU both compute hosts have beside BASE_INVENTORY's, cut into vGPUs
# (the fake driver's ``vgpu`` entry: MDEV handles as the nvidia_gpu driver
# gives them). Type id and name as a GPU's mdev_supported_types would
# list them; made up.
VGPU_TYPE = {'type': 'nvidia-222', 'name': 'GRID V100-4Q', 'instances': 2}
VGPU_TRAIT = 'CUSTOM_VGPU_GRID_V100_4Q'
VGPU_GPU_UUID = 'GPU-5b1e0c3a-7d4f-4e62-9a18-c0ffee000222'
VGPU_GPU = {'type': 'GPU', 'vendor': '0x10de', 'model': 'Tesla V100',
            'pci_address': '0000:d8:00.0', 'uuid': VGPU_GPU_UUID,
            'std_board_info': {'device_id': '0x1db4', 'class': '0x030200'},
            'deployables': [
                {'name': 'gpu1',
                 'attributes': {'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA'},
                 'pci_functions': ['0000:d8:00.0']}],
            'vgpu': VGPU_TYPE}
INVENTORY = copy.deepcopy(infra.BASE_INVENTORY)
INVENTORY['devices'].append(VGPU_GPU)
NOVA_API_WSGI = '''import sys
# Nova's WSGI entry point parses sys.argv as its own command line:
# gunicorn's would be rejected.
sys.argv = sys.argv[:1]
from nova.wsgi.osapi_compute import application  # noqa: E402,F401
'''


class NeutronStandIn:
    """What Nova 34 asks of Neutron for servers without networks, answered
    from nothing: no ports, no networks, no extensions. Every request is
    recorded (``requests``; those it has no answer for in ``unknown``, and
    answered 404) so a test can see what Nova asked."""

    EMPTY = {'/v2.0/ports': 'ports', '/v2.0/networks': 'networks',
             '/v2.0/extensions': 'extensions',
             '/v2.0/security-groups': 'security_groups',
             '/v2.0/floatingips': 'floatingips',
             '/v2.0/subnets': 'subnets'}

    def __init__(self):
        self.requests = []
        self.unknown = []
        self.port = infra.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        stand_in = self

        class Handler(json_http.QuietHandler):
            def do_GET(self):
                stand_in.requests.append(('GET', self.path))
                path = self.path.split('?', 1)[0].rstrip('/')
                if path in ('', '/v2.0'):
                    return self._answer(200, {'versions': [{
                        'id': 'v2.0', 'status': 'CURRENT', 'links': [{
                            'rel': 'self', 'href': stand_in.url + '/v2.0/'}]
                    }]})
                key = stand_in.EMPTY.get(path)
                if key is None:
                    stand_in.unknown.append(self.path)
                    return self._answer(404, {'NeutronError': {
                        'type': 'NotFound', 'message': path, 'detail': ''}})
                return self._answer(200, {key: []})

        self.server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Nova:
    """Nova's processes, configuration and a small client of its API.

    ``computes`` maps each nova-compute's host name (our agents' hosts) to
    its service; ``services`` holds them all (``nova-api``,
    ``nova-conductor``, ``nova-scheduler``, ``nova-compute-<host>``).
    """

    def __init__(self, workdir, keystone, transport_url, db_urls,
                 placement_url, neutron_url, hosts):
        self.workdir = workdir
        self.keystone = keystone
        self.transport_url = transport_url
        self.db_urls = db_urls
        self.placement_url = placement_url
        self.neutron_url = neutron_url
        self.hosts = list(hosts)
        self.port = infra.free_port()
        self.url = 'http://127.0.0.1:%d/v2.1' % self.port
        self.config_file = os.path.join(workdir, 'nova.conf')
        self.services = {}

    # -- configuration

    def configure(self):
        with open(self.config_file, 'w') as f:
            f.write(self._config())
        with open(os.path.join(self.workdir, 'nova_api_wsgi.py'), 'w') as f:
            f.write(NOVA_API_WSGI)
        with open(os.path.join(VENV, 'etc', 'nova', 'api-paste.ini')) as s, \
                open(os.path.join(self.workdir, 'api-paste.ini'), 'w') as d:
            d.write(s.read())
        self._add('nova-api', [
            os.path.join(VENV_BIN, 'gunicorn'), '--workers', '1',
            '--threads', '8', '--no-control-socket', '--chdir',
            self.workdir, '--bind', '127.0.0.1:%d' % self.port,
            'nova_api_wsgi:application'], 'Booting worker',
            env={'OS_NOVA_CONFIG_DIR': self.workdir})
        for binary in ('conductor', 'scheduler'):
            self._add('nova-' + binary, self._argv('nova-' + binary),
                      'Starting %s node' % binary)
        for host in self.hosts:
            self._add('nova-compute-' + host, self._argv(
                'nova-compute', self._compute_config(host)),
                'Starting compute node')

    def _auth(self, user='nova', project='service'):
        return f"""auth_type = password
auth_url = {self.keystone.auth_url}
username = {user}
password = {self.keystone.password(user)}
project_name = {project}
user_domain_name = Default
project_domain_name = Default
region_name = {ks.REGION}
"""

    def _config(self):
        state = os.path.join(self.workdir, 'state')
        return f"""[DEFAULT]
transport_url = {self.transport_url}
compute_driver = fake.FakeDriverWithoutFakeNodes
state_path = {state}
my_ip = 127.0.0.1
arq_binding_timeout = {ARQ_BINDING_TIMEOUT}
# Periodic tasks and heartbeats of a test cloud: few and short. A host
# the tests stop is forced down (as an operator fences it), so nothing
# waits for service_down_time; it is long enough that a busy CI machine
# never makes a running nova-compute look down to the scheduler.
report_interval = 2
service_down_time = 60
# A stopped service ends at once (oslo.service waits 60 s by default).
graceful_shutdown_timeout = 1
debug = true

[api_database]
connection = {self.db_urls['api']}

[database]
connection = {self.db_urls['cell1']}

[api]
auth_strategy = keystone

[wsgi]
api_paste_config = {os.path.join(self.workdir, 'api-paste.ini')}

[oslo_concurrency]
lock_path = {os.path.join(state, 'locks')}

[conductor]
workers = 1

[scheduler]
workers = 1

[keystone_authtoken]
www_authenticate_uri = {self.keystone.auth_url}
{self._auth()}service_token_roles_required = true

[service_user]
send_service_user_token = true
{self._auth()}
[placement]
auth_type = admin_token
endpoint = {self.placement_url}
token = admin

[glance]
region_name = {ks.REGION}

[cyborg]
region_name = {ks.REGION}

[neutron]
endpoint_override = {self.neutron_url}
{self._auth()}
[oslo_messaging_notifications]
driver = noop
"""

    def _compute_config(self, host):
        state = os.path.join(self.workdir, 'compute-' + host)
        os.makedirs(os.path.join(state, 'instances'))
        path = os.path.join(self.workdir, 'compute-%s.conf' % host)
        with open(path, 'w') as f:
            f.write(f"""[DEFAULT]
host = {host}
state_path = {state}
instances_path = {os.path.join(state, 'instances')}

[oslo_concurrency]
lock_path = {os.path.join(state, 'locks')}
""")
        return path

    def _argv(self, binary, *extra):
        argv = [os.path.join(VENV_BIN, binary), '--config-file',
                self.config_file]
        for path in extra:
            argv += ['--config-file', path]
        return argv

    def _add(self, name, argv, ready, env=None):
        self.services[name] = process.Service(
            name, argv, os.path.join(self.workdir, name + '.log'), ready,
            env=env)

    def manage(self, *args):
        return run(self._argv('nova-manage') + list(args), timeout=300)

    # -- lifecycle

    def register_in_keystone(self):
        """The ``compute`` service and its endpoint in the catalog: how
        cyborg_like's conductor finds Nova. Its id, for
        :meth:`unregister`."""
        service = self.keystone.admin_request('POST', '/services', json={
            'service': {'type': 'compute', 'name': 'nova'}})['service']['id']
        self.keystone.admin_request('POST', '/endpoints', json={
            'endpoint': {'service_id': service, 'interface': 'public',
                         'region_id': ks.REGION, 'url': self.url}})
        return service

    def unregister(self, service):
        """Out of the session's catalog (its endpoints go with it): no
        later deployment finds a Nova that is gone."""
        self.keystone.admin_request('DELETE', '/services/%s' % service)

    def setup_databases(self):
        self.manage('api_db', 'sync')
        self.manage('cell_v2', 'map_cell0', '--database_connection',
                    self.db_urls['cell0'])
        self.manage('cell_v2', 'create_cell', '--name', 'cell1')
        self.manage('db', 'sync')

    def start(self):
        """Every service, those of a kind at the same time; the computes
        mapped to cell1 and up."""
        start_all([self.services[name] for name in (
            'nova-conductor', 'nova-scheduler', 'nova-api')])
        wait_for(lambda: requests.get(self.url, timeout=5).ok,
                 timeout=START_TIMEOUT, message='Nova API never answered')
        self.start_compute(*self.hosts)

    def start_compute(self, *hosts):
        start_all([self.services['nova-compute-' + h] for h in hosts])
        self.manage('cell_v2', 'discover_hosts')
        for host in hosts:
            self.wait_compute(host, 'up')

    def stop(self):
        """Every service, at the same time (each waits for its own)."""
        threads = [threading.Thread(target=svc.stop)
                   for svc in self.services.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    # -- the API

    def request(self, method, path, body=None, expected=None, user='admin'):
        """A request as ``user`` (a user of keystone.USERS, on its own
        project); asserts the status if ``expected`` is given."""
        resp = requests.request(
            method, self.url + path, json=body, timeout=60, headers={
                'X-Auth-Token': self.keystone.token(user),
                'OpenStack-API-Version': MICROVERSION})
        if expected is not None:
            assert resp.status_code == expected, (
                method, path, resp.status_code, resp.text)
        return resp

    def wait_compute(self, host, state, timeout=START_TIMEOUT):
        """Until Nova's compute service of ``host`` is ``up``/``down``."""
        def check():
            services = self.request(
                'GET', '/os-services?binary=nova-compute&host=%s' % host,
                expected=200).json()['services']
            return services and services[0]['state'] == state
        wait_for(check, timeout=timeout, message='nova-compute on %s never '
                 '%s' % (host, state))

    def fence(self, host):
        """Stop nova-compute of ``host`` and force it down, as an operator
        does once the host is fenced, so that Nova evacuates its servers at
        once (not after service_down_time)."""
        self.services['nova-compute-' + host].stop()
        self.request('PUT', '/os-services/%s' % self._service_id(host),
                     {'forced_down': True}, expected=200)

    def unfence(self, host):
        """Start nova-compute of a fenced ``host`` and lift the forced down.
        Nova lifts it only once the restarted service has completed the
        host's evacuation records (a 400 until then)."""
        start_all([self.services['nova-compute-' + host]])
        path = '/os-services/%s' % self._service_id(host)
        wait_for(lambda: self.request(
            'PUT', path, {'forced_down': False}).status_code == 200,
            timeout=START_TIMEOUT,
            message='Nova never lifted the forced down of %s' % host)
        self.wait_compute(host, 'up')

    def _service_id(self, host):
        [service] = self.request(
            'GET', '/os-services?binary=nova-compute&host=%s' % host,
            expected=200).json()['services']
        return service['id']

    def wait_migration(self, uuid, kind, timeout=SERVER_TIMEOUT):
        """Until the server's newest migration of ``kind`` (``evacuation``,
        ``resize``...) has ended; returns it. A server is ACTIVE with no
        task before an evacuation ends: the target compute moves
        ``host`` to itself only after that (Nova's resource tracker,
        finish_evacuation), so a test waits on the migration instead."""
        ended = ('done', 'completed', 'failed', 'error')

        def check():
            migrations = self.request(
                'GET', '/os-migrations?instance_uuid=%s&migration_type=%s'
                % (uuid, kind), expected=200).json()['migrations']
            newest = max(migrations, key=lambda m: m['created_at'],
                         default=None)
            return newest if newest and newest['status'] in ended else None
        return wait_for(check, timeout, 'the %s of server %s never ended'
                        % (kind, uuid), interval=0.5, stop_on=STOP_WAITING)

    def last_action(self, uuid):
        """The server's newest instance action with its events (what
        Nova did and why it failed), for a failing assertion's message."""
        actions = self.request(
            'GET', '/servers/%s/os-instance-actions' % uuid,
            expected=200).json()['instanceActions']
        newest = max(actions, key=lambda a: a['start_time'])
        return self.request(
            'GET', '/servers/%s/os-instance-actions/%s' % (
                uuid, newest['request_id']),
            expected=200).json()['instanceAction']

    def server(self, uuid):
        resp = self.request('GET', '/servers/%s' % uuid)
        if resp.status_code == 404:
            return None
        assert resp.status_code == 200, (uuid, resp.status_code, resp.text)
        return resp.json()['server']

    def servers(self):
        return self.request('GET', '/servers/detail?all_tenants=1',
                            expected=200).json()['servers']

    def wait_server(self, uuid, statuses, timeout=SERVER_TIMEOUT):
        """Until the server has one of ``statuses`` and no task; returns
        it. Fails at once on an unexpected ERROR."""
        def check():
            server = self.server(uuid)
            if server is None:
                raise HarnessError('server %s is gone' % uuid)
            if server['status'] == 'ERROR' and 'ERROR' not in statuses:
                raise AssertionError('server %s went to ERROR: %s' % (
                    uuid, server.get('fault')))
            if (server['status'] in statuses
                    and server['OS-EXT-STS:task_state'] is None):
                return server
            return None
        return wait_for(check, timeout, 'server %s never %s' % (
            uuid, '/'.join(statuses)), interval=0.5, stop_on=STOP_WAITING)

    def wait_gone(self, uuid, timeout=SERVER_TIMEOUT):
        wait_for(lambda: self.server(uuid) is None, timeout=timeout,
                 message='server %s was never deleted' % uuid)

    def action(self, uuid, body, expected=202):
        return self.request('POST', '/servers/%s/action' % uuid, body,
                            expected=expected)

    def logs(self):
        return {name: svc.tail() for name, svc in self.services.items()}


def start_all(services):
    """Start ``services`` side by side (each waits for its ready line);
    the first error, once all are done."""
    errors = []

    def start(service):
        try:
            service.start(START_TIMEOUT)
        except Exception as exc:    # noqa: BLE001 - raised below
            errors.append(exc)
    threads = [threading.Thread(target=start, args=(svc,))
               for svc in services]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class NovaCloud:
    """What a test of the real Nova holds: ``nova``, ``dep`` (the cyborg_like
    :class:`keystone.KeystoneDeployment`), ``placement``, ``neutron``,
    ``glance``, ``image`` (a Glance image id) and ``hosts`` (the two
    compute hosts, the first being ``dep.host``)."""

    def __init__(self, nova, dep, placement, neutron, glance, image):
        self.nova = nova
        self.dep = dep
        self.placement = placement
        self.neutron = neutron
        self.glance = glance
        self.image = image
        self.hosts = nova.hosts

    def logs(self):
        found = {'cyborg-like-' + name: text
                 for name, text in self.dep.logs().items()}
        found.update(self.nova.logs())
        return found


def second_agent(dep, host, workdir):
    """An ``agent2`` service of ``dep``: another compute host, ``host``,
    with its own state and a copy of the base inventory; added to
    ``dep.services`` (started and stopped by the caller)."""
    state = os.path.join(workdir, 'state-' + host)
    os.makedirs(state)
    inventory = os.path.join(workdir, 'inventory-%s.yaml' % host)
    with open(dep.inventory_file) as s, open(inventory, 'w') as d:
        d.write(s.read())
    own = os.path.join(workdir, 'agent2.conf')
    with open(own, 'w') as f:
        f.write('[DEFAULT]\nhost = %s\nstate_path = %s\n'
                '[fake_driver]\ninventory_file = %s\n'
                % (host, state, inventory))
    argv = list(dep.services['agent'].argv) + ['--config-file', own]
    dep.services['agent2'] = process.Service(
        'agent2', argv, os.path.join(workdir, 'agent2.log'),
        'Agent on %s started' % host, env=dep.services['agent'].env)
    return dep.services['agent2']


def write_bitstreams(directory, bitstreams):
    """``{id: content}`` as the fake driver's bitstream files."""
    os.makedirs(directory, exist_ok=True)
    for name, content in bitstreams.items():
        with open(os.path.join(directory, name), 'w') as f:
            f.write(content)


def glance_image(glance):
    """A public raw image with a few bytes of data; its id."""
    resp = glance.admin_request('POST', '/v2/images', json={
        'name': 'nova-it', 'disk_format': 'raw', 'container_format': 'bare',
        'visibility': 'public'})
    assert resp.status_code == 201, resp.text
    image = resp.json()['id']
    resp = glance.admin_request(
        'PUT', '/v2/images/%s/file' % image, data=b'\0' * 1024,
        headers={'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 204, resp.text
    return image


@contextlib.contextmanager
def _databases(names):
    with contextlib.ExitStack() as stack:
        yield {name: stack.enter_context(fresh_database('mariadb'))
               for name in names}


def events_user(keystone):
    """A user for our [nova] options, with ``service`` and ``admin`` on the
    service project; its name.

    ``admin`` is what Nova needs: os-server-external-events looks the
    instances up with the caller's context, scoped to the caller's project
    unless it is an admin one, and answers 404 for the instance of any
    other project (an event from a user with ``service`` alone is dropped).
    Returns (name, id).
    """
    name = 'cyborg-events-%s' % os.urandom(3).hex()
    user = keystone.admin_request('POST', '/users', json={'user': {
        'name': name, 'domain_id': 'default',
        'password': keystone.password(name)}})['user']['id']
    for role in ('service', 'admin'):
        keystone.admin_request('PUT', '/projects/%s/users/%s/roles/%s' % (
            keystone.project_ids['service'], user, keystone.role_ids[role]))
    return name, user


def _cyborg_config(keystone, placement_url, bitstream_dir, nova_user):
    return f"""[placement]
auth_type = admin_token
endpoint = {placement_url}
token = admin
sync_interval = 2

[nova]
{_password(nova_user, keystone)}
[agent]
bitstream_dir = {bitstream_dir}

# A lease needing back a device Nova bound asks Nova to shelve and offload
# the instance: within seconds here.
[leases]
check_interval = 1
grace_seconds = 1
"""


def _password(user, keystone):
    return f"""auth_type = password
auth_url = {keystone.auth_url}
username = {user}
password = {keystone.password(user)}
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = {ks.REGION}
"""


@contextlib.contextmanager
def nova_cloud(workdir, keystone, glance, bitstreams=None):
    """A started :class:`NovaCloud` (see the module docstring); every
    process stopped and every database and vhost dropped at the end."""
    if not os.path.exists(os.path.join(VENV_BIN, 'nova-compute')):
        raise HarnessError('%s is missing: run tools/setup-nova-venv.sh'
                           % VENV)
    placement = PlacementServer(_mkdir(workdir, 'placement'))
    neutron = NeutronStandIn()
    bitstream_dir = _mkdir(workdir, 'bitstreams')
    write_bitstreams(bitstream_dir, bitstreams or {})
    with contextlib.ExitStack() as stack:
        placement.start()
        stack.callback(placement.stop)
        neutron.start()
        stack.callback(neutron.stop)
        transport_url = stack.enter_context(rabbitmq_vhost())
        cyborg_db = stack.enter_context(fresh_database('mariadb'))
        nova_dbs = stack.enter_context(_databases(('api', 'cell0', 'cell1')))
        nova_user, user_id = events_user(keystone)
        stack.callback(keystone.admin_request, 'DELETE', '/users/' + user_id)
        dep = ks.KeystoneDeployment(
            'mariadb', _mkdir(workdir, 'cyborg'), transport_url, cyborg_db,
            keystone, inventory=INVENTORY, extra_config=_cyborg_config(
                keystone, placement.url, bitstream_dir, nova_user))
        host2 = dep.host + '-2'
        agent2 = second_agent(dep, host2, dep.workdir)
        nova = Nova(_mkdir(workdir, 'nova'), keystone, transport_url,
                    nova_dbs, placement.url, neutron.url, [dep.host, host2])
        stack.callback(dep.close)
        stack.callback(agent2.stop)
        stack.callback(nova.stop)
        try:
            keystone.set_accelerator_url(dep.api_url)
            stack.callback(nova.unregister, nova.register_in_keystone())
            nova.configure()
            # Nova's databases (four nova-manage runs) while ours start.
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                synced = pool.submit(nova.setup_databases)
                dep.dbsync('upgrade')
                dep.start()
                agent2.start()
                synced.result()
            nova.start()
            image = glance_image(glance)
            stack.callback(glance.admin_request, 'DELETE',
                           '/v2/images/%s' % image)
            cloud = NovaCloud(nova, dep, placement, neutron, glance, image)
            # The Keystone id of our [nova] user (events, server actions).
            cloud.events_user_id = user_id
            wait_synced(cloud)
        except BaseException:
            _print_logs(dep, nova)
            raise
        yield cloud


def wait_synced(cloud):
    """Until Placement shows our providers under both compute nodes."""
    # One provider per deployable, and one for a GPU's vGPUs.
    expected = sum(len(d['deployables']) + bool(d.get('vgpu'))
                   for d in INVENTORY['devices'])

    def check():
        providers = cloud.placement.get(
            '/resource_providers?required=CUSTOM_CYBORG_LIKE_MANAGED'
        )['resource_providers']
        return len(providers) == expected * len(cloud.hosts)
    wait_for(check, timeout=START_TIMEOUT,
             message='our providers never appeared under both compute '
                     'nodes in Placement')


def _mkdir(parent, name):
    path = os.path.join(parent, name)
    os.makedirs(path, exist_ok=True)
    return path


def _print_logs(dep, nova):
    import sys
    dep.print_logs()
    for name, text in nova.logs().items():
        sys.stderr.write('----- %s\n%s\n' % (name, text))


# -- what the flows check after each step

def cyborg_state(dep):
    """The ARQs and the handles in use, from cyborg_like's database."""
    with dep.engine.connect() as conn:
        arqs = conn.execute(sa.text(
            'SELECT uuid, state, hostname, device_rp_uuid, instance_uuid, '
            'attach_handle_id FROM extended_accelerator_requests')
        ).mappings().all()
        handles = conn.execute(sa.text(
            'SELECT id FROM attach_handles WHERE in_use OR release_pending')
        ).scalars().all()
    return [dict(a) for a in arqs], set(handles)


def our_allocations(placement):
    """{consumer: {rp uuid: resources}} on our providers in Placement."""
    found = {}
    for rp in placement.get(
            '/resource_providers?required=CUSTOM_CYBORG_LIKE_MANAGED'
    )['resource_providers']:
        allocations = placement.get('/resource_providers/%s/allocations'
                                    % rp['uuid'])['allocations']
        for consumer, alloc in allocations.items():
            found.setdefault(consumer, {})[rp['uuid']] = alloc['resources']
    return found


def assert_consistent(cloud, expected=None):
    """ARQs, handles and Placement allocations agree with the servers
    that exist: every ARQ belongs to a live server and is Bound on that
    server's host, with a handle in use; every handle in use is held by a
    Bound ARQ; our providers' allocations are exactly those ARQs'.
    ``expected``: {server uuid: number of ARQs}, checked too. Retries for
    a while (the clean-up of a deleted server is asynchronous); returns
    the ARQs by server."""
    last = []

    def check():
        servers = {s['id']: s for s in cloud.nova.servers()}
        arqs, handles = cyborg_state(cloud.dep)
        allocations = our_allocations(cloud.placement)
        problems = _disagreements(servers, arqs, handles, allocations,
                                  expected)
        last[:] = problems
        if problems:
            return None
        by_server = {}
        for arq in arqs:
            by_server.setdefault(arq['instance_uuid'], []).append(arq)
        return [by_server]
    return wait_for(check, 60, lambda: 'ARQs, handles and allocations '
                    'disagree with the servers: %s' % '; '.join(last),
                    interval=0.5, stop_on=STOP_WAITING)[0]


def _disagreements(servers, arqs, handles, allocations, expected):
    problems = []
    held = set()
    for arq in arqs:
        server = servers.get(arq['instance_uuid'])
        if server is None:
            problems.append('ARQ %s of no server' % arq['uuid'])
            continue
        if arq['state'] != 'Bound':
            problems.append('ARQ %s is %s' % (arq['uuid'], arq['state']))
        if arq['hostname'] != server['OS-EXT-SRV-ATTR:host']:
            problems.append('ARQ %s on %s, its server on %s' % (
                arq['uuid'], arq['hostname'],
                server['OS-EXT-SRV-ATTR:host']))
        held.add(arq['attach_handle_id'])
        alloc = allocations.get(arq['instance_uuid'], {})
        if arq['device_rp_uuid'] not in alloc:
            problems.append('ARQ %s: no allocation on %s' % (
                arq['uuid'], arq['device_rp_uuid']))
    if handles != held:
        problems.append('handles in use %s, held by ARQs %s' % (
            sorted(handles), sorted(held)))
    wanted = {a['instance_uuid'] for a in arqs}
    for consumer in allocations:
        if consumer not in wanted:
            problems.append('allocation of %s on our providers' % consumer)
    for uuid, count in (expected or {}).items():
        got = sum(1 for a in arqs if a['instance_uuid'] == uuid)
        if got != count:
            problems.append('server %s has %d ARQs, not %d' % (
                uuid, got, count))
    return problems
