"""``cyborg-like`` against a deployment that authenticates with Keystone.

The real Keystone of the session (keystone.py) has the ``accelerator``
service in its catalog, pointed at this module's API (MariaDB). The CLI
finds the endpoint there: each command runs as a subprocess with a
``clouds.yaml`` written here (``OS_CLIENT_CONFIG_FILE``) and
``--os-cloud``, or with ``OS_*`` variables, as operators configure it.
"""

import json
import os
import subprocess

import pytest
import yaml

from . import infra
from . import keystone as ks

# long: the openstack CLI against Keystone (tests/ordering.py starts it
# first).
pytestmark = [pytest.mark.integration, pytest.mark.long]

CYBORG_LIKE = os.path.join(infra.BIN, 'cyborg-like')
TIMEOUT = 120
# Cloud name in clouds.yaml -> (user, project).
CLOUDS = {'it-admin': ('admin', 'admin'), 'it-member': ('p1-member', 'p1')}


@pytest.fixture(scope='module')
def deployment(keystone_cloud, tmp_path_factory):
    """Replaces conftest's: one deployment, on MariaDB, with Keystone."""
    workdir = str(tmp_path_factory.mktemp('cli-keystone'))
    with ks.keystone_deployment('mariadb', workdir, keystone_cloud) as dep:
        dep.wait_host_up()
        yield dep


def _auth(keystone, user, project):
    return {'auth_url': keystone.auth_url, 'username': user,
            'password': keystone.password(user), 'project_name': project,
            'user_domain_name': 'Default', 'project_domain_name': 'Default'}


@pytest.fixture(scope='module')
def clouds_yaml(keystone_cloud, tmp_path_factory):
    path = str(tmp_path_factory.mktemp('cli-clouds') / 'clouds.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump({'clouds': {
            name: {'auth': _auth(keystone_cloud, user, project),
                   'region_name': ks.REGION, 'identity_api_version': 3}
            for name, (user, project) in CLOUDS.items()}}, f)
    return path


def run(*args, env=None):
    if not os.path.exists(CYBORG_LIKE):
        pytest.fail('%s is missing: run tools/setup-venv.sh' % CYBORG_LIKE)
    clean = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    clean.update(env or {})
    return subprocess.run([CYBORG_LIKE] + list(args), capture_output=True,
                          text=True, env=clean, timeout=TIMEOUT, check=False,
                          stdin=subprocess.DEVNULL)


def cloud(clouds_yaml, name, *args):
    """``cyborg-like --os-cloud NAME ARGS -f json``, which must succeed."""
    result = run('--os-cloud', name, *args, '-f', 'json',
                 env={'OS_CLIENT_CONFIG_FILE': clouds_yaml})
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


def test_admin_lists_with_os_cloud(deployment, clouds_yaml):
    (host,) = cloud(clouds_yaml, 'it-admin', 'host', 'list')
    assert (host['hostname'], host['state']) == (deployment.host, 'up')
    devices = cloud(clouds_yaml, 'it-admin', 'device', 'list')
    assert [d['uuid'] for d in devices] == [
        d['uuid'] for d in deployment.admin_get('/v2/devices')['devices']]
    deployables = cloud(clouds_yaml, 'it-admin', 'deployable', 'list')
    assert sorted(d['name'] for d in deployables) == sorted(
        d['name'] for d in
        deployment.admin_get('/v2/deployables')['deployables'])
    for words, path, key in (
            (('operation',), 'operations', 'operations'),
            (('attribute',), 'attributes', 'attributes'),
            (('arq',), 'accelerator_requests', 'arqs'),
            (('device', 'profile'), 'device_profiles', 'device_profiles')):
        listed = cloud(clouds_yaml, 'it-admin', *words, 'list')
        assert [i['uuid'] for i in listed] == [
            i['uuid'] for i in deployment.admin_get('/v2/' + path)[key]
        ], words


def test_member_sees_own_quota_and_is_refused_devices(
        deployment, clouds_yaml, keystone_cloud):
    quota = cloud(clouds_yaml, 'it-member', 'quota', 'show')
    # No project given: the one of the member's token.
    p1 = keystone_cloud.project_ids['p1']
    assert quota == deployment.admin_get('/v2/quotas/%s' % p1)['quota']
    assert quota['project_id'] == p1
    result = run('--os-cloud', 'it-member', 'device', 'list',
                 env={'OS_CLIENT_CONFIG_FILE': clouds_yaml})
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith('HTTP 403 '), line


def test_os_variables_without_clouds_yaml(deployment, keystone_cloud):
    env = {'OS_%s' % k.upper(): v for k, v in
           _auth(keystone_cloud, 'admin', 'admin').items()}
    env.update(OS_REGION_NAME=ks.REGION, OS_IDENTITY_API_VERSION='3',
               OS_CLIENT_CONFIG_FILE=os.devnull)
    result = run('host', 'list', '-f', 'value', '-c', 'hostname', '-c',
                 'state', env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [deployment.host, 'up']
    wrong = dict(env, OS_PASSWORD='not-the-password')
    result = run('host', 'list', env=wrong)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
