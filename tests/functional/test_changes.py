"""The change log (GET /v2/changes): every committed write of an API
request is recorded with its request id, caller and target, in the
transaction that made it; reads, refused writes and the agents' reports
are not."""

import json

import webob

from cyborg_like.common import context
from cyborg_like.db import changes
from tests.functional import cloud as cloud_module

MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p1',
          'X-User-Id': 'alice'}
OTHER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p2',
         'X-User-Id': 'bob'}
ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'admin',
         'X-User-Id': 'root'}


def _request(cloud, method, path, body=None, headers=MEMBER):
    """(status, body, request id) of one request to the app."""
    request = webob.Request.blank(path, method=method, headers=headers)
    if body is not None:
        request.body = json.dumps(body).encode()
        request.content_type = 'application/json'
    response = request.get_response(cloud.app)
    return (response.status_int, response.json if response.body else None,
            response.headers['X-OpenStack-Request-Id'])


def _changes(cloud, query, headers=MEMBER):
    status, body = cloud.call('GET', '/v2/changes?' + query,
                              headers=headers)
    assert status == 200, body
    return body['changes']


def _profile(cloud):
    status, _, _ = _request(cloud, 'POST', '/v2/device_profiles',
                            {'name': 'gpu',
                             'groups': [{'resources:PGPU': '1'}]}, ADMIN)
    assert status == 201


def test_a_create_is_found_by_its_request_id(cloud):
    _profile(cloud)
    status, body, request_id = _request(
        cloud, 'POST', '/v2/accelerator_requests',
        {'device_profile_name': 'gpu'})
    assert status == 201
    arq = body['arqs'][0]['uuid']

    [change] = _changes(cloud, 'request_id=' + request_id)
    assert change['method'] == 'create_arqs'
    assert (change['user_id'], change['project_id']) == ('alice', 'p1')
    assert arq in change['target']
    assert 'extended_accelerator_requests' in change['written']
    assert 'quota_usages' in change['written']
    assert change['request_id'] == request_id
    # Found by its target too.
    assert [c['uuid'] for c in _changes(cloud, 'target=' + arq)] == \
        [change['uuid']]


def test_reads_and_refused_writes_leave_nothing(cloud):
    _profile(cloud)
    before = len(_changes(cloud, '', ADMIN))
    assert _request(cloud, 'GET', '/v2/accelerator_requests')[0] == 200
    status, _, refused = _request(cloud, 'POST', '/v2/accelerator_requests',
                                  {'device_profile_name': 'nothing'})
    assert status == 404
    assert _changes(cloud, 'request_id=' + refused, ADMIN) == []
    assert len(_changes(cloud, '', ADMIN)) == before


def test_the_agents_reports_are_not_logged(cloud):
    # The cloud's agent reported its inventory and beats at start.
    assert cloud.list_devices()
    methods = {c['method'] for c in _changes(cloud, '', ADMIN)}
    assert not methods & changes.UNRECORDED


def test_a_member_sees_only_its_projects_changes(cloud):
    _profile(cloud)
    _, _, mine = _request(cloud, 'POST', '/v2/accelerator_requests',
                          {'device_profile_name': 'gpu'})
    _, _, theirs = _request(cloud, 'POST', '/v2/accelerator_requests',
                            {'device_profile_name': 'gpu'}, OTHER)
    seen = {c['request_id'] for c in _changes(cloud, '')}
    assert mine in seen and theirs not in seen
    assert _changes(cloud, 'request_id=' + theirs) == []
    # The admin sees every project's, and filters by project.
    assert {c['request_id'] for c in _changes(cloud, 'project_id=p2',
                                               ADMIN)} == {theirs}


def test_a_bind_by_the_service_is_logged_with_the_arq(cloud):
    _profile(cloud)
    _, body, _ = _request(cloud, 'POST', '/v2/accelerator_requests',
                          {'device_profile_name': 'gpu'})
    arq = body['arqs'][0]['uuid']
    deployable = next(
        d for d in cloud.conductor_api.list_deployables(
            context.get_admin_context(), {}, 100, None, 'created_at', 'asc')
        if d['num_accelerators'])
    nova = {'X-Roles': 'service', 'X-Project-Id': 'service',
            'X-User-Id': 'nova'}
    patch = {arq: [
        {'path': '/hostname', 'op': 'add', 'value': cloud_module.HOST},
        {'path': '/device_rp_uuid', 'op': 'add',
         'value': deployable['rp_uuid']},
        {'path': '/instance_uuid', 'op': 'add',
         'value': '10000000-0000-0000-0000-0000000000aa'}]}
    status, _, request_id = _request(
        cloud, 'PATCH', '/v2/accelerator_requests', patch, nova)
    assert status == 202
    [change] = _changes(cloud, 'request_id=' + request_id, ADMIN)
    assert change['method'] == 'bind_arqs'
    assert change['user_id'] == 'nova'
    assert arq in change['target']


def test_bad_filters_are_refused(cloud):
    status, body = cloud.call('GET', '/v2/changes?method=DROP%20TABLE',
                              headers=MEMBER)
    assert status == 400
    status, body = cloud.call('GET', '/v2/changes?colour=red',
                              headers=MEMBER)
    assert status == 400
