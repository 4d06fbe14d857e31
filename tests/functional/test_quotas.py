"""Per-project accelerator quotas, through the API as a project member."""

import concurrent.futures

import pytest

from cyborg_like.conf import CONF
from tests.functional import cloud as cloud_module

MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p1'}
ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'admin'}
NOVA = {'X-Roles': 'service', 'X-Project-Id': 'service'}


def _call(cloud, method, path, body=None, headers=MEMBER):
    return cloud.call(method, path, body, headers)


@pytest.fixture
def quota_cloud():
    cloud = cloud_module.Cloud(overrides={
        ('quota', 'default_limits'): {'FPGA': '3'}}).start()
    _call(cloud, 'POST', '/v2/device_profiles',
          {'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}, ADMIN)
    _call(cloud, 'POST', '/v2/device_profiles',
          {'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]}, ADMIN)
    try:
        yield cloud
    finally:
        cloud.stop()


def test_a_project_stops_at_its_limit(quota_cloud):
    created = [_call(quota_cloud, 'POST', '/v2/accelerator_requests',
                     {'device_profile_name': 'fpga'}) for _ in range(3)]
    assert [status for status, _ in created] == [201, 201, 201]
    status, body = _call(quota_cloud, 'POST', '/v2/accelerator_requests',
                         {'device_profile_name': 'fpga'})
    assert status == 403
    assert 'Quota exceeded for FPGA: limit 3, in use 3, requested 1' in \
        body['error_message']
    # Unlimited classes and other projects are not affected.
    assert _call(quota_cloud, 'POST', '/v2/accelerator_requests',
                 {'device_profile_name': 'gpu'})[0] == 201
    assert _call(quota_cloud, 'POST', '/v2/accelerator_requests',
                 {'device_profile_name': 'fpga'},
                 dict(MEMBER, **{'X-Project-Id': 'p2'}))[0] == 201

    status, body = _call(quota_cloud, 'GET', '/v2/quotas/p1')
    assert status == 200
    assert body['quota']['limits'] == {'FPGA': 3}
    assert body['quota']['usage'] == {'FPGA': 3, 'PGPU': 1}
    assert _call(quota_cloud, 'GET', '/v2/quotas/p2')[0] == 403

    # Deleting gives the units back.
    uuid = created[0][1]['arqs'][0]['uuid']
    assert _call(quota_cloud, 'DELETE',
                 '/v2/accelerator_requests?arqs=%s' % uuid)[0] == 204
    assert _call(quota_cloud, 'GET', '/v2/quotas/p1')[1][
        'quota']['usage']['FPGA'] == 2
    assert _call(quota_cloud, 'POST', '/v2/accelerator_requests',
                 {'device_profile_name': 'fpga'})[0] == 201


def test_concurrent_creation_never_exceeds_the_limit(quota_cloud):
    headers = dict(MEMBER, **{'X-Project-Id': 'racing'})
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(
            lambda _: _call(quota_cloud, 'POST', '/v2/accelerator_requests',
                            {'device_profile_name': 'fpga'}, headers)[0],
            range(10)))
    assert sorted(statuses) == [201] * 3 + [403] * 7
    status, body = _call(quota_cloud, 'GET', '/v2/accelerator_requests',
                         headers=headers)
    assert len(body['arqs']) == 3


def _two_arqs_then_bind_one(quota_cloud, lower):
    """Two FPGA ARQs of p1; ``lower()`` lowers p1's limit to 1; then Nova
    binds the first: the binding fails on the quota."""
    [arq] = _call(quota_cloud, 'POST', '/v2/accelerator_requests',
                  {'device_profile_name': 'fpga'})[1]['arqs']
    _call(quota_cloud, 'POST', '/v2/accelerator_requests',
          {'device_profile_name': 'fpga'})
    lower()
    rp = _call(quota_cloud, 'GET', '/v2/deployables?name=region0',
               headers=ADMIN)[1]['deployables'][0]['rp_uuid']
    status, _ = _call(quota_cloud, 'PATCH', '/v2/accelerator_requests', {
        arq['uuid']: [
            {'op': 'add', 'path': '/hostname',
             'value': cloud_module.HOST},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
            {'op': 'add', 'path': '/instance_uuid',
             'value': '50000000-0000-0000-0000-000000000001'}]},
        headers=NOVA)   # only Nova binds
    assert status == 202

    def failed():
        body = _call(quota_cloud, 'GET',
                     '/v2/accelerator_requests/%s' % arq['uuid'])[1]
        return body if body['state'] == 'BindFailed' else None
    body = quota_cloud.wait_for(failed)
    assert 'Quota exceeded for FPGA: limit 1, in use 2' in \
        body['state_reason']


def test_a_lowered_limit_stops_binding(quota_cloud):
    try:
        _two_arqs_then_bind_one(quota_cloud, lambda: CONF.set_override(
            'default_limits', {'FPGA': '1'}, group='quota'))
    finally:
        CONF.clear_override('default_limits', group='quota')


def test_a_project_limit_lowered_through_the_api_stops_binding(
        quota_cloud):
    def lower():
        status, body = _call(quota_cloud, 'PUT', '/v2/quotas/p1',
                             {'limits': {'FPGA': 1}}, ADMIN)
        assert (status, body['quota']['limits']['FPGA']) == (200, 1), body
    _two_arqs_then_bind_one(quota_cloud, lower)
