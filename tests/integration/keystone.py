"""A real Keystone for the integration tests, and deployments that use it.

``keystone_cloud`` (session scope; made visible to every module by
conftest.py) configures Keystone 30 on SQLite in a temporary directory,
bootstraps it for a port chosen first (auth_token finds Keystone through its
catalog), serves it with gunicorn on that loopback port, and creates:

* projects ``p1`` and ``p2`` (and ``service``; ``admin`` is bootstrap's);
* users, each with one role on one project (Keystone adds the implied ones:
  admin > manager > member > reader):

  ========== ======= ========= ===============================================
  user       role    project   stands for
  ========== ======= ========= ===============================================
  admin      admin   admin     the cloud administrator (bootstrap's user)
  p1-manager manager p1        a project manager
  p1-member  member  p1        a project member
  p1-reader  reader  p1        a project reader
  p2-member  member  p2        a member of another project
  nova       service service   Nova, calling on its own behalf
  cyborg     service service   our auth_token and oslo.limit user; it also has
                               reader on the system, to read endpoints and
                               limits
  ========== ======= ========= ===============================================

* the ``accelerator`` service with a public endpoint in RegionOne (a
  deployment points it at its API with ``set_accelerator_url``; oslo.limit
  finds the service and region through ``[oslo_limit] endpoint_id``);
* the registered limit ``class:FPGA`` = REGISTERED_FPGA_LIMIT, and a project
  limit for p1 of P1_FPGA_LIMIT.

Nothing is installed at test time: keystone and gunicorn come from
test-requirements.txt. Keystone is stopped (SIGINT to its process group) at
the end of the session, whatever happens.
"""

import contextlib
import os
import subprocess
import sys
import uuid

import pytest
import requests

from . import gunicorn
from . import infra

REGION = 'RegionOne'
SERVICE_TYPE = 'accelerator'
REGISTERED_FPGA_LIMIT = 2
P1_FPGA_LIMIT = 3
# (user, role, project) as in the module docstring; bootstrap makes admin.
USERS = (
    ('p1-manager', 'manager', 'p1'),
    ('p1-member', 'member', 'p1'),
    ('p1-reader', 'reader', 'p1'),
    ('p2-member', 'member', 'p2'),
    ('nova', 'service', 'service'),
    ('cyborg', 'service', 'service'),
)
START_TIMEOUT = 90.0
HTTP_TIMEOUT = 30.0

# keystone-manage's steps in one interpreter: importing keystone costs
# seconds, four separate keystone-manage runs cost four times that.
_MANAGE = r'''
import sys
from keystone.cmd import cli
from keystone.conf import CONF
config_file, url, password = sys.argv[1:4]
for step in (
        ['db_sync'],
        ['fernet_setup', '--keystone-user', 'root', '--keystone-group',
         'root'],
        ['credential_setup', '--keystone-user', 'root', '--keystone-group',
         'root'],
        ['bootstrap', '--bootstrap-password', password,
         '--bootstrap-admin-url', url, '--bootstrap-internal-url', url,
         '--bootstrap-public-url', url, '--bootstrap-region-id', 'RegionOne']):
    CONF.clear()
    cli.main(argv=['keystone-manage', '--config-file', config_file] + step)
'''

# Keystone 30's keystone.wsgi.api reads gunicorn's command line as its own:
# the application is built with an empty one.
_WSGI = '''import sys
sys.argv = sys.argv[:1]
from keystone.server import wsgi
application = wsgi.initialize_public_application()
'''


class KeystoneError(Exception):
    pass


class Keystone(gunicorn.GunicornPeer):
    error = KeystoneError

    """One Keystone process and what the tests made in it."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.port = infra.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.auth_url = self.url + '/v3'
        self.config_file = os.path.join(workdir, 'keystone.conf')
        self.log_path = os.path.join(workdir, 'keystone.log')
        self.server_log_path = os.path.join(workdir, 'gunicorn.log')
        self.secret = uuid.uuid4().hex
        self.proc = None
        self._log = None
        self._admin_token = None
        self._tokens = {}
        # Filled by populate().
        self.project_ids = {}
        self.user_ids = {}
        self.role_ids = {}
        self.user_projects = {'admin': 'admin'}
        self.service_id = None
        self.endpoint_id = None

    # -- process

    def start(self):
        self._configure()
        self._serve()

    def _configure(self):
        fernet = os.path.join(self.workdir, 'fernet-keys')
        credential = os.path.join(self.workdir, 'credential-keys')
        os.makedirs(fernet)
        os.makedirs(credential)
        with open(self.config_file, 'w') as f:
            f.write(f"""[DEFAULT]
log_file = {self.log_path}

[database]
connection = sqlite:///{os.path.join(self.workdir, 'keystone.db')}

[token]
provider = fernet

[fernet_tokens]
key_repository = {fernet}

[credential]
key_repository = {credential}

[identity]
password_hash_rounds = 4

[resource]
admin_project_name = admin
admin_project_domain_name = Default
""")
        with open(os.path.join(self.workdir, 'keystone_wsgi.py'), 'w') as f:
            f.write(_WSGI)
        proc = subprocess.run(
            [sys.executable, '-c', _MANAGE, self.config_file, self.auth_url,
             self.password('admin')],
            capture_output=True, text=True, timeout=START_TIMEOUT)
        if proc.returncode != 0:
            raise KeystoneError('keystone-manage failed (%d):\n%s%s\n%s' % (
                proc.returncode, proc.stdout, proc.stderr, self.tail()))

    def _serve(self):
        super()._serve('keystone_wsgi:application',
                       {'OS_KEYSTONE_CONFIG_FILES': self.config_file},
                       self.auth_url, START_TIMEOUT)

    # -- tokens

    def password(self, user):
        return '%s-%s' % (user, self.secret)

    def token(self, user, project=None):
        """A project-scoped token of ``user`` (on its own project)."""
        project = project or self.user_projects[user]
        key = (user, project)
        if key not in self._tokens:
            resp = requests.post(self.auth_url + '/auth/tokens', json={
                'auth': {'identity': {'methods': ['password'], 'password': {
                    'user': {'name': user, 'domain': {'id': 'default'},
                             'password': self.password(user)}}},
                    'scope': {'project': {'name': project,
                                          'domain': {'id': 'default'}}}}},
                timeout=HTTP_TIMEOUT)
            if resp.status_code != 201:
                raise KeystoneError('No token for %s on %s: %s %s' % (
                    user, project, resp.status_code, resp.text))
            self._tokens[key] = resp.headers['X-Subject-Token']
        return self._tokens[key]

    def admin_request(self, method, path, **kwargs):
        """``method`` /v3``path`` as the cloud admin; the JSON answer."""
        resp = requests.request(
            method, self.auth_url + path, timeout=HTTP_TIMEOUT,
            headers={'X-Auth-Token': self.token('admin', 'admin')}, **kwargs)
        if resp.status_code >= 300:
            raise KeystoneError('%s %s: %s %s' % (method, path,
                                                  resp.status_code,
                                                  resp.text))
        return resp.json() if resp.content else None

    # -- what the tests need

    def populate(self):
        self.role_ids = {r['name']: r['id'] for r in
                         self.admin_request('GET', '/roles')['roles']}
        self.project_ids = {p['name']: p['id'] for p in
                            self.admin_request('GET', '/projects')['projects']}
        self.user_ids = {u['name']: u['id'] for u in
                         self.admin_request('GET', '/users')['users']}
        for name in ('service', 'p1', 'p2'):
            self.project_ids[name] = self.admin_request(
                'POST', '/projects', json={'project': {
                    'name': name, 'domain_id': 'default'}})['project']['id']
        for user, role, project in USERS:
            self.user_ids[user] = self.admin_request(
                'POST', '/users', json={'user': {
                    'name': user, 'domain_id': 'default',
                    'password': self.password(user)}})['user']['id']
            self.admin_request('PUT', '/projects/%s/users/%s/roles/%s' % (
                self.project_ids[project], self.user_ids[user],
                self.role_ids[role]))
            self.user_projects[user] = project
        # oslo.limit reads the endpoint and the limits with a system token.
        self.admin_request('PUT', '/system/users/%s/roles/%s' % (
            self.user_ids['cyborg'], self.role_ids['reader']))
        self.service_id = self.admin_request('POST', '/services', json={
            'service': {'type': SERVICE_TYPE, 'name': 'cyborg_like'}}
        )['service']['id']
        self.endpoint_id = self.admin_request('POST', '/endpoints', json={
            'endpoint': {'service_id': self.service_id, 'interface': 'public',
                         'region_id': REGION,
                         'url': 'http://127.0.0.1:9/'}})['endpoint']['id']
        self.admin_request('POST', '/registered_limits', json={
            'registered_limits': [{
                'service_id': self.service_id, 'region_id': REGION,
                'resource_name': 'class:FPGA',
                'default_limit': REGISTERED_FPGA_LIMIT}]})
        self.admin_request('POST', '/limits', json={'limits': [{
            'service_id': self.service_id, 'region_id': REGION,
            'project_id': self.project_ids['p1'],
            'resource_name': 'class:FPGA',
            'resource_limit': P1_FPGA_LIMIT}]})

    def set_accelerator_url(self, url):
        """Point the catalog's accelerator endpoint at a deployment's API."""
        self.admin_request('PATCH', '/endpoints/%s' % self.endpoint_id,
                           json={'endpoint': {'url': url}})

    def authtoken_config(self):
        """Configuration of the API: auth_token against this Keystone."""
        return f"""[api]
auth_strategy = keystone
# Creating ARQs asks Keystone for limits: more than infra's short time-out.
conductor_timeout = 30

[keystone_authtoken]
www_authenticate_uri = {self.auth_url}
auth_url = {self.auth_url}
auth_type = password
username = cyborg
password = {self.password('cyborg')}
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = {REGION}
service_token_roles_required = true
http_connect_timeout = 10
"""

    def oslo_limit_config(self):
        """[oslo_limit]: read this Keystone's limits for our endpoint."""
        return f"""[oslo_limit]
endpoint_id = {self.endpoint_id}
auth_url = {self.auth_url}
auth_type = password
username = cyborg
password = {self.password('cyborg')}
user_domain_name = Default
system_scope = all
"""


@pytest.fixture(scope='session')
def keystone_cloud(tmp_path_factory):
    """The running, populated Keystone of the whole session."""
    keystone = Keystone(str(tmp_path_factory.mktemp('keystone')))
    try:
        try:
            keystone.start()
            keystone.populate()
        except KeystoneError as exc:
            pytest.fail('Keystone could not be started: %s' % exc,
                        pytrace=False)
        yield keystone
    finally:
        keystone.stop()


class KeystoneDeployment(infra.Deployment):
    """A :class:`infra.Deployment` whose API authenticates with Keystone.

    Every service also reads auth_token against ``keystone`` plus
    ``extra_config`` (the harness's extra file, read after the shared one).
    """

    def __init__(self, backend, workdir, transport_url, db_url, keystone,
                 extra_config='', **kwargs):
        super().__init__(backend, workdir, transport_url, db_url,
                         extra_config=keystone.authtoken_config() + '\n'
                         + extra_config, **kwargs)
        self.keystone = keystone

    def request(self, method, path, token=None, version='latest',
                **kwargs):
        """An API request with ``token`` (None: none at all)."""
        headers = {'OpenStack-API-Version': 'accelerator %s' % version}
        if token is not None:
            headers['X-Auth-Token'] = token
        headers.update(kwargs.pop('headers', {}))
        return requests.request(method, self.api_url + path,
                                headers=headers, timeout=infra.WAIT_TIMEOUT,
                                **kwargs)

    def admin_get(self, path):
        """GET ``path`` as the cloud admin; asserts 200, returns the JSON."""
        resp = self.request('GET', path, self.keystone.token('admin'))
        assert resp.status_code == 200, (path, resp.status_code, resp.text)
        return resp.json()

    def print_logs(self, stream=None):
        super().print_logs(stream)
        (stream or sys.stderr).write('----- keystone\n%s\n'
                                     % self.keystone.tail())

    # infra.Deployment's helpers, with the admin's token.
    def get(self, path, timeout=infra.WAIT_TIMEOUT, **kwargs):
        headers = kwargs.pop('headers', {})
        headers.setdefault('OpenStack-API-Version', 'accelerator latest')
        headers.setdefault('X-Auth-Token', self.keystone.token('admin'))
        return requests.get(self.api_url + path, timeout=timeout,
                            headers=headers, **kwargs)


@contextlib.contextmanager
def keystone_deployment(backend, workdir, keystone, extra_config=''):
    """A started :class:`KeystoneDeployment` on a fresh vhost and database,
    with the accelerator endpoint of the catalog pointing at its API, and
    the fake driver's devices visible through the API.
    """
    with infra.rabbitmq_vhost() as transport_url, \
            infra.fresh_database(backend) as db_url:
        dep = KeystoneDeployment(backend, workdir, transport_url, db_url,
                                 keystone, extra_config=extra_config)
        # Its API's port is chosen already; nothing reads the catalog
        # before the tests do.
        keystone.set_accelerator_url(dep.api_url)
        with infra.started(dep, infra.all_devices):
            yield dep
