"""Cyborg's own API tests against cyborg_like behind the real Keystone.

cyborg-tempest-plugin 2.8.0 with tempest 47.0.0, from their own virtualenv
(tools/setup-tempest-venv.sh, run by tools/run-integration-tests.sh
--setup-only), against a MariaDB deployment authenticating with the
session's Keystone, whose catalog's ``accelerator`` endpoint is the
deployment's ``/v2``. Tempest makes its personas (admin, project manager,
member, reader, service) as dynamic credentials with the Keystone admin.

Three policy modes, each a deployment of its own:

* ``compatible``: new defaults with etc/cyborg_like/policy-cyborg-
  compatible.yaml: every test passes but those that expect Cyborg's 500s;
* ``ours``: new defaults with our own defaults: those, and the inventory
  reads of the project-manager persona (403, stricter on purpose);
* ``legacy``: ``enforce_new_defaults = false``; the plugin's personas are
  then all the admin, and its secure-RBAC classes skip themselves.

The scenario tests (a server booted with an accelerator) need Nova and
Neutron: not run. docs/compatibility.md explains every expected failure.
The results are read from tempest's subunit stream, per test.
"""

import csv
import io
import os
import re
import subprocess
import textwrap

import pytest

from . import keystone as ks

pytestmark = [pytest.mark.integration, pytest.mark.long,
              pytest.mark.timeout(900)]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VENV = os.path.join(ROOT, '.cache', 'tempest-venv')
COMPATIBLE_POLICY = os.path.join(ROOT, 'etc', 'cyborg_like',
                                 'policy-cyborg-compatible.yaml')
API_TESTS = r'^cyborg_tempest_plugin\.tests\.api\.'
RUN_TIMEOUT = 600

# They expect Cyborg's 500 where cyborg_like answers 400 (an empty or a
# 256-character profile name) or 409 (a posted uuid a profile has).
EXPECT_500 = {
    'DeviceProfileNegativeTest.test_create_device_profile_name_is_null',
    'DeviceProfileNegativeTest.test_create_device_profile_name_to_long',
    'DeviceProfileNegativeTest.test_create_device_profile_server_fault',
}
# The project manager reads the inventory in Cyborg; ours: cloud admin.
INVENTORY_READS = {
    'TestDevice.test_list_get_device',
    'TestDevice.test_list_devices_filter_by_type',
    'TestDevice.test_list_devices_filter_by_non_exist_type',
    'TestDevice.test_list_devices_filter_by_vendor',
    'TestDevice.test_list_devices_filter_by_non_exist_vendor',
    'TestDevice.test_list_devices_filter_by_hostname',
    'TestDevice.test_list_devices_filter_by_non_exist_hostname',
    'TestDevice.test_list_devices_filter_by_combine_args',
    'DeviceNegativeTest.test_get_non_existent_device',
    'TestDeployables.test_list_deployables',
    'DeployableNegativeTest.test_get_non_existent_deployable',
    'TestAttributes.test_list_attributes',
    'TestAttributes.test_get_attribute',
    'AttributeNegativeTest.test_get_non_existent_attribute',
}
# Skipped by the plugin itself unless the new defaults are on.
SECURE_RBAC_CLASSES = {'TestSRBACServiceRole', 'TestSRBACAdminImpliedRoles',
                       'TestSRBACScopeEnforcement'}

MODES = {
    'compatible': ('true', COMPATIBLE_POLICY),
    'ours': ('true', None),
    'legacy': ('false', None),
}
EXPECTED_FAILURES = {
    'compatible': EXPECT_500,
    'ours': EXPECT_500 | INVENTORY_READS,
    'legacy': EXPECT_500,
}
EXPECTED_SKIPS = {
    'compatible': set(),
    'ours': set(),
    'legacy': SECURE_RBAC_CLASSES,
}
# Of the plugin's 42 API tests; legacy: its 3 secure-RBAC classes (9
# tests) skip themselves.
EXPECTED_PASSED = {'compatible': 39, 'ours': 25, 'legacy': 30}


def _policy_config(new_defaults, policy_file):
    lines = ['[oslo_policy]', 'enforce_new_defaults = %s' % new_defaults]
    if policy_file:
        lines.append('policy_file = %s' % policy_file)
    return '\n'.join(lines) + '\n'


def _tempest_conf(keystone, new_defaults):
    return textwrap.dedent(f"""\
        [DEFAULT]
        log_file = tempest.log

        [auth]
        use_dynamic_credentials = true
        admin_username = admin
        admin_password = {keystone.password('admin')}
        admin_project_name = admin
        admin_domain_name = Default
        create_isolated_networks = false

        [identity]
        auth_version = v3
        uri_v3 = {keystone.auth_url}
        region = {ks.REGION}
        default_domain_id = default

        [identity-feature-enabled]
        api_v2 = false

        [service_available]
        cyborg = true
        nova = false
        neutron = false
        glance = false
        cinder = false
        swift = false

        [cyborg_policy]
        enforce_new_defaults = {new_defaults}

        [enforce_scope]
        cyborg = true
        """)


def _short(test_id):
    """'Class.test' of a subunit test id (module and tags dropped); a
    class skipped as a whole ('setUpClass (module.Class)') is 'Class', a
    failed clean-up of its credentials 'Class.tearDownClass'."""
    test_id = re.sub(r'\[.*\]$', '', test_id)
    whole_class = re.match(r'^(setUpClass|tearDownClass) \((.*)\)$',
                           test_id)
    if whole_class:
        name = whole_class.group(2).rsplit('.', 1)[1]
        return name if whole_class.group(1) == 'setUpClass' else (
            name + '.tearDownClass')
    return '.'.join(test_id.rsplit('.', 2)[1:])


def run_tempest(workdir, keystone, new_defaults):
    """{'Class.test': status} of one run of the plugin's API tests."""
    with open(os.path.join(workdir, 'tempest.conf'), 'w') as f:
        f.write(_tempest_conf(keystone, new_defaults))
    env = dict(os.environ, TEMPEST_CONFIG_DIR=workdir,
               TEMPEST_CONFIG='tempest.conf', OS_LOG_CAPTURE='1')
    stream = os.path.join(workdir, 'results.subunit')
    with open(stream, 'wb') as out:
        proc = subprocess.run(
            [os.path.join(VENV, 'bin', 'tempest'), 'run', '--config-file',
             os.path.join(workdir, 'tempest.conf'), '--regex', API_TESTS,
             # One at a time: Keystone on SQLite answers concurrent
             # writes (tempest's dynamic users) with "database is locked".
             '--serial', '--subunit'],
            cwd=workdir, env=env, stdout=out, stderr=subprocess.PIPE,
            timeout=RUN_TIMEOUT)
    with open(stream, 'rb') as f:
        # Exits 1 when a test failed: the table is there all the same.
        table = subprocess.run(
            [os.path.join(VENV, 'bin', 'subunit2csv')], stdin=f,
            capture_output=True).stdout.decode()
    results = {_short(row['test']): row['status']
               for row in csv.DictReader(io.StringIO(table))}
    # Shown with a failed test, beside tempest.log in ``workdir``.
    print('tempest run: exit %d, log %s/tempest.log\n%s' % (
        proc.returncode, workdir, proc.stderr.decode()[-3000:]))
    assert results, 'tempest reported no test'
    return results


@pytest.fixture(scope='module')
def venv():
    assert os.path.exists(os.path.join(VENV, 'bin', 'tempest')), (
        'no tempest: run tools/setup-tempest-venv.sh '
        '(tools/run-integration-tests.sh --setup-only does)')
    return VENV


@pytest.mark.parametrize('mode', sorted(MODES))
def test_cyborg_tempest_api_tests(mode, venv, keystone_cloud,
                                  tmp_path_factory):
    new_defaults, policy_file = MODES[mode]
    workdir = str(tmp_path_factory.mktemp('tempest-%s' % mode))
    with ks.keystone_deployment(
            'mariadb', workdir, keystone_cloud,
            extra_config=_policy_config(new_defaults, policy_file)) as dep:
        dep.wait_host_up()
        keystone_cloud.set_accelerator_url(dep.api_url + '/v2')
        results = run_tempest(workdir, keystone_cloud, new_defaults)
    failed = {t for t, s in results.items() if s in ('fail', 'failure')}
    skipped = {t for t, s in results.items() if s == 'skip'}
    passed = {t for t, s in results.items() if s == 'success'}
    print('%s: %d passed, %d failed, %d skipped' % (
        mode, len(passed), len(failed), len(skipped)))
    assert failed == EXPECTED_FAILURES[mode], sorted(
        failed ^ EXPECTED_FAILURES[mode])
    assert skipped == EXPECTED_SKIPS[mode], sorted(skipped)
    assert set(results) == passed | failed | skipped, results
    assert len(passed) == EXPECTED_PASSED[mode], sorted(passed)
