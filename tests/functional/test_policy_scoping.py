"""Policy decisions the conductor enforces, with the whole service running.

The API decides (oslo.policy); the conductor enforces the outcome inside
its transaction: which projects a caller's bind checks look at, and
whether bound requests may be deleted.
"""

import json
import uuid

import pytest

from cyborg_like.api import policy as api_policy
from cyborg_like.common import context as context_lib
from cyborg_like.common import exception
from tests.functional import cloud as cloud_module

ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'admin'}
NOVA = {'X-Roles': 'service', 'X-Project-Id': 'service'}


def member(project):
    return {'X-Roles': 'member,reader', 'X-Project-Id': project}


def _call(cloud, method, path, headers, body=None):
    return cloud.call(method, path, body, headers)


def _start(overrides=None):
    api_policy.reset()      # the enforcer reads policy_file when made
    cloud = cloud_module.Cloud(overrides=overrides).start()
    _call(cloud, 'POST', '/v2/device_profiles', ADMIN,
          {'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]})
    cloud.gpu_rps = [d['rp_uuid'] for d in cloud.conductor_api
                     .list_deployables(context_lib.get_admin_context(),
                                       {}, 1000, None, 'created_at', 'asc')
                     if d['name'] == 'gpu0']
    return cloud


@pytest.fixture
def members_bind_cloud(tmp_path):
    """An operator who lets project members bind (Cyborg's default)."""
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(
        '"cyborg:arq:update": "rule:project_member_or_service"\n')
    cloud = _start({('oslo_policy', 'policy_file'): str(policy_file)})
    try:
        yield cloud
    finally:
        cloud.stop()
        api_policy.reset()


@pytest.fixture
def default_cloud():
    cloud = _start()
    try:
        yield cloud
    finally:
        cloud.stop()
        api_policy.reset()


def _create(cloud, headers):
    status, body = _call(cloud, 'POST', '/v2/accelerator_requests', headers,
                         {'device_profile_name': 'gpu'})
    assert status == 201, body
    return body['arqs'][0]['uuid']


def _bind(cloud, headers, arq, instance, rp):
    return _call(cloud, 'PATCH', '/v2/accelerator_requests', headers, {
        arq: [{'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
              {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
              {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})


def _state(cloud, arq):
    return _call(cloud, 'GET', '/v2/accelerator_requests/%s' % arq,
                 ADMIN)[1]['state']


def _bound(cloud, arq):
    assert cloud.wait_for(lambda: _state(cloud, arq) in (
        'Bound', 'BindFailed')) and _state(cloud, arq) == 'Bound'


def test_instance_check_sees_only_the_callers_project(members_bind_cloud):
    cloud = members_bind_cloud
    instance = str(uuid.uuid4())
    p1_arq = _create(cloud, member('p1'))
    assert _bind(cloud, member('p1'), p1_arq, instance,
                 cloud.gpu_rps[0])[0] == 202
    _bound(cloud, p1_arq)
    # Project p2 cannot learn that p1 uses this instance: no 400 or 409.
    p2_arq = _create(cloud, member('p2'))
    status, body = _bind(cloud, member('p2'), p2_arq, instance,
                         cloud.gpu_rps[1])
    assert status == 202, body
    _bound(cloud, p2_arq)
    # p1's own second request for its instance: Cyborg's 400.
    another = _create(cloud, member('p1'))
    status, body = _bind(cloud, member('p1'), another, instance,
                         cloud.gpu_rps[0])
    assert status == 400, body
    fault = json.loads(body['error_message'])
    assert (fault['faultstring'], fault['error_code']) == (
        'Instance %s already has accelerator requests. Cannot bind '
        'additional ARQs.' % instance, 'accel.arq.instance_bound')
    assert _state(cloud, another) == 'Initial'
    # Nova sees every project's.
    assert _bind(cloud, NOVA, another, instance, cloud.gpu_rps[0])[0] == 400
    # Members bind here, but deleting bound requests is still Nova's.
    status, body = _call(cloud, 'DELETE', '/v2/accelerator_requests?'
                         'arqs=%s' % p1_arq, member('p1'))
    assert status == 403, body
    assert _state(cloud, p1_arq) == 'Bound'


def test_conductor_refuses_to_delete_bound_unless_told(default_cloud):
    """The API's decision travels with the call; the conductor checks the
    rows inside the delete's transaction, all or nothing. A caller that
    says nothing (an API before RPC 1.7) may not delete bound requests."""
    cloud = default_cloud
    instance = str(uuid.uuid4())
    bound = _create(cloud, member('p1'))
    assert _bind(cloud, NOVA, bound, instance, cloud.gpu_rps[0])[0] == 202
    _bound(cloud, bound)
    unbound = _create(cloud, member('p1'))
    p1 = context_lib.RequestContext(project_id='p1', roles=['member'])
    for kwargs in ({'uuids': [unbound, bound]},
                   {'uuids': [unbound, bound], 'delete_bound': False},
                   {'instance_uuid': instance}):
        with pytest.raises(exception.ARQDeleteBoundForbidden):
            cloud.conductor_api.delete_arqs(p1, **kwargs)
    assert (_state(cloud, unbound), _state(cloud, bound)) == (
        'Initial', 'Bound')
    cloud.conductor_api.delete_arqs(p1, uuids=[unbound, bound],
                                    delete_bound=True)
    assert _call(cloud, 'GET', '/v2/accelerator_requests', ADMIN)[1][
        'arqs'] == []


def test_conductor_refuses_to_unbind_bound_unless_told(default_cloud):
    """As for deletes (RPC 1.25): an unbind naming a Bound request the
    caller may not unbind unbinds none of them; told it may, it does."""
    cloud = default_cloud
    bound = _create(cloud, member('p1'))
    assert _bind(cloud, NOVA, bound, str(uuid.uuid4()),
                 cloud.gpu_rps[0])[0] == 202
    _bound(cloud, bound)
    unbound = _create(cloud, member('p1'))
    admin = context_lib.RequestContext(project_id='admin', roles=['admin'],
                                       is_admin=True, all_projects=True)
    with pytest.raises(exception.ARQUnbindBoundForbidden,
                       match='requires a service token'):
        cloud.conductor_api.unbind_arqs(admin, [unbound, bound],
                                        unbind_bound=False)
    assert _state(cloud, bound) == 'Bound'
    cloud.conductor_api.unbind_arqs(admin, [unbound, bound],
                                    unbind_bound=True)
    assert (_state(cloud, unbound), _state(cloud, bound)) == (
        'Initial', 'Unbound')
    cloud.conductor_api.delete_arqs(admin, uuids=[unbound, bound])
