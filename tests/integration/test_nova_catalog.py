"""The conductor finds Nova through the real Keystone's catalog.

Nova registers its endpoint with the major version in the path
(``.../compute/v2.1``); the conductor must take it from the catalog as it
is and send the 2.82 microversion as a header. Given a major version of
2.82 (as it once was), keystoneauth matched no endpoint and no event ever
reached Nova: the tests that named Nova's endpoint directly hid it.
"""

import uuid

import pytest
from oslo_config import cfg

from cyborg_like.conductor import nova
from cyborg_like.conf import nova as nova_conf
from tests import fake_nova

REGION_ID = 'NovaCatalogTest'
pytestmark = pytest.mark.integration


@pytest.fixture
def nova_in_catalog(keystone_cloud):
    """A stand-in of Nova's API behind a compute endpoint of the catalog,
    in a region of its own (other tests may register a real Nova)."""
    server = fake_nova.FakeNova(prefix='/compute/v2.1')
    server.thread.start()
    keystone_cloud.admin_request('POST', '/regions', json={
        'region': {'id': REGION_ID}})
    service = keystone_cloud.admin_request('POST', '/services', json={
        'service': {'type': 'compute', 'name': 'nova'}})['service']['id']
    try:
        for interface in ('public', 'internal'):
            keystone_cloud.admin_request('POST', '/endpoints', json={
                'endpoint': {'service_id': service, 'interface': interface,
                             'region_id': REGION_ID,
                             'url': 'http://127.0.0.1:%d/compute/v2.1'
                                    % server.server_address[1]}})
        yield server
    finally:
        keystone_cloud.admin_request('DELETE', '/services/%s' % service)
        keystone_cloud.admin_request('DELETE', '/regions/%s' % REGION_ID)
        server.shutdown()


def _conf(keystone, tmp_path):
    """[nova] as docs/nova.md says: the service user, no endpoint."""
    path = tmp_path / 'nova.conf'
    path.write_text(f"""[nova]
auth_type = password
auth_url = {keystone.auth_url}
username = cyborg
password = {keystone.password('cyborg')}
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = {REGION_ID}
connect_retries = 0
status_code_retries = 0
""")
    conf = cfg.ConfigOpts()
    nova_conf.register_opts(conf)
    conf(['--config-file', str(path)], project='cyborg_like',
         default_config_files=[])
    return conf


def test_nova_is_found_through_the_catalog(keystone_cloud, nova_in_catalog,
                                           tmp_path):
    notifier = nova.NovaNotifier(_conf(keystone_cloud, tmp_path))
    arq, server = str(uuid.uuid4()), str(uuid.uuid4())

    assert notifier.binding_ended(arq, server, True) is True

    [(path, headers, body)] = nova_in_catalog.calls
    assert path == '/compute/v2.1/os-server-external-events'
    assert headers['OpenStack-API-Version'] == 'compute 2.82'
    assert headers['X-OpenStack-Nova-API-Version'] == '2.82'
    assert headers['X-Auth-Token']
    assert body == {'events': [{'name': 'accelerator-request-bound',
                                'server_uuid': server, 'tag': arq,
                                'status': 'completed'}]}
    # The lease path's server actions go the same way.
    assert notifier.release_step(server) == 'shelve'
    assert nova_in_catalog.actions == [(server, 'shelve')]
