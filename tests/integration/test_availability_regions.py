"""One view of two sites: ``cyborg-like availability show --all-regions``
merges the feeds of the regions the Keystone catalog lists.

Region RegionOne is a deployment behind the real Keystone (site-a, on
MariaDB); RegionTwo another (site-b, on PostgreSQL), registered in the
catalog for this module only. The CLI finds both in the catalog of an
admin's token and asks each.
"""

import json

import pytest

from . import infra
from . import keystone as ks
from .test_cli_keystone import clouds_yaml  # noqa: F401 (a fixture)
from .test_cli_keystone import run

pytestmark = pytest.mark.integration

SECOND_REGION = 'RegionTwo'


@pytest.fixture(scope='module')
def two_regions(keystone_cloud, tmp_path_factory):
    first_dir = str(tmp_path_factory.mktemp('region-one'))
    second_dir = str(tmp_path_factory.mktemp('region-two'))
    with ks.keystone_deployment('mariadb', first_dir, keystone_cloud,
                                extra_config='[DEFAULT]\nsite = site-a\n'
                                ) as first, \
            infra.running_deployment(
                'postgresql', second_dir,
                extra_config='[DEFAULT]\nsite = site-b\n',
                wait_for_devices=lambda devices: len(devices) == 2
            ) as second:
        first.wait_host_up()
        second.wait_host_up()
        keystone_cloud.admin_request('POST', '/regions', json={
            'region': {'id': SECOND_REGION}})
        endpoint = keystone_cloud.admin_request('POST', '/endpoints', json={
            'endpoint': {'service_id': keystone_cloud.service_id,
                         'interface': 'public', 'region_id': SECOND_REGION,
                         'url': second.api_url}})['endpoint']['id']
        try:
            yield first, second
        finally:
            keystone_cloud.admin_request('DELETE', '/endpoints/%s'
                                         % endpoint)
            keystone_cloud.admin_request('DELETE', '/regions/%s'
                                         % SECOND_REGION)


def test_all_regions_in_one_table(two_regions, clouds_yaml):  # noqa: F811
    first, second = two_regions
    env = {'OS_CLIENT_CONFIG_FILE': clouds_yaml}
    result = run('--os-cloud', 'it-admin', 'availability', 'show',
                 '--all-regions', '--group-by', 'resource_class,host',
                 '-f', 'json', env=env)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    by_site = {(r['site'], r['resource_class']): (r['host'], r['total'],
                                                  r['free'])
               for r in rows}
    assert by_site == {
        ('site-a', 'FPGA'): (first.host, 3, 3),
        ('site-a', 'PGPU'): (first.host, 1, 1),
        ('site-b', 'FPGA'): (second.host, 3, 3),
        ('site-b', 'PGPU'): (second.host, 1, 1)}
    # Without --all-regions: the cloud's own region only.
    result = run('--os-cloud', 'it-admin', 'availability', 'show',
                 '--group-by', 'resource_class', '-f', 'json', env=env)
    assert result.returncode == 0, result.stderr
    assert {r['site'] for r in json.loads(result.stdout)} == {'site-a'}
