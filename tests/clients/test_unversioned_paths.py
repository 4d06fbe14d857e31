"""The service root as endpoint, without version discovery: paths below
/v2 are served without the prefix, as Cyborg serves them.

keystoneauth (under openstacksdk, python-cyborgclient and Nova) joins an
endpoint override and a path as given when no version is asked for, so a
client configured with http://host:6666 calls /devices, not /v2/devices.
"""

from keystoneauth1 import adapter
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session
import pytest


@pytest.fixture(scope='module')
def root(cyborg):
    session = ks_session.Session(auth=noauth.NoAuth())
    yield adapter.Adapter(session, service_type='accelerator',
                          endpoint_override=cyborg.url,
                          raise_exc=False)
    session.session.close()


def test_devices_at_the_root(root, cyborg):
    response = root.get('/devices', microversion='2.3')
    assert response.url == cyborg.url + '/devices'
    assert response.status_code == 200, response.text
    devices = response.json()['devices']
    assert {d['type'] for d in devices} == {'FPGA', 'GPU'}
    assert all(d['status'] == 'enabled' for d in devices)
    assert response.headers['OpenStack-API-Version'] == 'accelerator 2.3'
    shown = root.get('/devices/' + devices[0]['uuid'])
    assert shown.status_code == 200
    assert shown.json()['uuid'] == devices[0]['uuid']


def test_profile_and_arq_lifecycle_at_the_root(root):
    created = root.post('/device_profiles', json={
        'name': 'root-endpoint-gpu', 'groups': [{'resources:PGPU': '1'}]})
    assert created.status_code == 201, created.text
    arq = root.post('/accelerator_requests', json={
        'device_profile_name': 'root-endpoint-gpu'})
    assert arq.status_code == 201, arq.text
    (arq_uuid,) = [a['uuid'] for a in arq.json()['arqs']]
    assert root.get('/accelerator_requests/' + arq_uuid).json()[
        'state'] == 'Initial'
    deleted = root.delete('/accelerator_requests', params={'arqs': arq_uuid})
    assert deleted.status_code == 204, deleted.text
    assert root.get('/accelerator_requests/' + arq_uuid).status_code == 404
    by_name = root.get('/device_profiles/root-endpoint-gpu',
                       microversion='2.2')
    assert by_name.status_code == 200, by_name.text
    assert root.delete('/device_profiles/root-endpoint-gpu').status_code \
        == 204


def test_inventory_at_the_root(root):
    deployables = root.get('/deployables').json()['deployables']
    assert {d['name'] for d in deployables} >= {'region0', 'region1', 'gpu0'}
    assert root.get('/attributes').status_code == 200
    assert root.put('/devices').status_code == 405
