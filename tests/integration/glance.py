"""A real OpenStack Glance for the tests of the catalog's ``glance`` store.

``glance_cloud`` (session scope; made visible by conftest.py) runs the
``glance`` package of test-requirements.txt: configured in a temporary
directory with a ``file`` backend (and Glance's reserved staging and tasks
stores) and its own SQLite database, synced with ``glance-manage``, served
by gunicorn (``glance.wsgi.api:application``; Glance has no standalone
server any more) behind keystonemiddleware against the session's real
Keystone (keystone.py). In Keystone it adds:

* the ``image`` service with a public endpoint in RegionOne, so clients
  find Glance through the catalog as in a cloud;
* the project ``images`` and the user ``catalog`` with ``member`` on it:
  the credentials of our ``[glance]`` options (Glance's default policies
  let a project member create, upload, download and delete its images).

Glance's auth_token uses the ``cyborg`` service user. Nothing is installed
at test time. Glance is stopped (SIGINT to its process group) at the end
of the session, whatever happens.
"""

import os
import shutil
import subprocess
import sys

import pytest
import requests

from . import gunicorn
from . import infra
from . import keystone as keystone_module

START_TIMEOUT = 120.0
PROJECT = 'images'
USER = 'catalog'


class GlanceError(Exception):
    pass


class Glance(gunicorn.GunicornPeer):
    error = GlanceError

    def __init__(self, workdir, keystone):
        self.workdir = workdir
        self.keystone = keystone
        self.port = infra.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.data_dir = os.path.join(workdir, 'images')
        self.config_file = os.path.join(workdir, 'glance-api.conf')
        self.log_path = os.path.join(workdir, 'glance-api.log')
        self.server_log_path = os.path.join(workdir, 'gunicorn.log')
        self.proc = None
        self._log = None

    def start(self):
        self._register_in_keystone()
        self._configure()
        self._db_sync()
        self._serve()

    def _register_in_keystone(self):
        ks = self.keystone
        project = ks.admin_request('POST', '/projects', json={'project': {
            'name': PROJECT, 'domain_id': 'default'}})['project']['id']
        user = ks.admin_request('POST', '/users', json={'user': {
            'name': USER, 'domain_id': 'default',
            'password': ks.password(USER)}})['user']['id']
        ks.admin_request('PUT', '/projects/%s/users/%s/roles/%s' % (
            project, user, ks.role_ids['member']))
        ks.project_ids[PROJECT] = project
        ks.user_ids[USER] = user
        ks.user_projects[USER] = PROJECT
        service = ks.admin_request('POST', '/services', json={'service': {
            'type': 'image', 'name': 'glance'}})['service']['id']
        ks.admin_request('POST', '/endpoints', json={'endpoint': {
            'service_id': service, 'interface': 'public',
            'region_id': keystone_module.REGION, 'url': self.url}})

    def _configure(self):
        dirs = {name: os.path.join(self.workdir, name)
                for name in ('images', 'staging', 'tasks')}
        for path in dirs.values():
            os.makedirs(path)
        ks = self.keystone
        with open(self.config_file, 'w') as f:
            f.write(f"""[DEFAULT]
log_file = {self.log_path}
enabled_backends = fs:file

[glance_store]
default_backend = fs

[fs]
filesystem_store_datadir = {dirs['images']}

[os_glance_staging_store]
filesystem_store_datadir = {dirs['staging']}

[os_glance_tasks_store]
filesystem_store_datadir = {dirs['tasks']}

[database]
connection = sqlite:///{os.path.join(self.workdir, 'glance.sqlite')}

[paste_deploy]
flavor = keystone

[keystone_authtoken]
www_authenticate_uri = {ks.auth_url}
auth_url = {ks.auth_url}
auth_type = password
username = cyborg
password = {ks.password('cyborg')}
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = {keystone_module.REGION}
http_connect_timeout = 10
""")
        # Glance reads its paste pipeline from beside its config file.
        shutil.copy(os.path.join(sys.prefix, 'etc', 'glance',
                                 'glance-api-paste.ini'), self.workdir)

    def _db_sync(self):
        proc = subprocess.run(
            [os.path.join(infra.BIN, 'glance-manage'), '--config-file',
             self.config_file, 'db_sync'],
            capture_output=True, text=True, timeout=START_TIMEOUT)
        if proc.returncode != 0:
            raise GlanceError('glance-manage db_sync failed (%d):\n%s%s' % (
                proc.returncode, proc.stdout, proc.stderr))

    def _serve(self):
        super()._serve('glance.wsgi.api:application',
                       {'OS_GLANCE_CONFIG_DIR': self.workdir},
                       self.url + '/versions', START_TIMEOUT)

    def store_config(self):
        """[glance] options of a service using the store as ``catalog``."""
        ks = self.keystone
        return {'auth_type': 'password', 'auth_url': ks.auth_url,
                'username': USER, 'password': ks.password(USER),
                'project_name': PROJECT, 'user_domain_name': 'Default',
                'project_domain_name': 'Default',
                'region_name': keystone_module.REGION}

    def admin_request(self, method, path, **kwargs):
        """A request to Glance as the cloud admin (to look behind the
        store's back)."""
        headers = {'X-Auth-Token': self.keystone.token('admin', 'admin')}
        headers.update(kwargs.pop('headers', {}))
        return requests.request(method, self.url + path, headers=headers,
                                timeout=keystone_module.HTTP_TIMEOUT,
                                **kwargs)


@pytest.fixture(scope='session')
def glance_cloud(keystone_cloud, tmp_path_factory):
    """The running Glance of the session, on the session's Keystone."""
    glance = Glance(str(tmp_path_factory.mktemp('glance')), keystone_cloud)
    try:
        try:
            glance.start()
        except GlanceError as exc:
            pytest.fail('Glance could not be started: %s' % exc,
                        pytrace=False)
        yield glance
    finally:
        glance.stop()
