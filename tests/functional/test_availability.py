"""The availability feed: counts against a known fleet, ETag and 304, and
cursor deltas after binds, drains and status changes."""

import pytest

from cyborg_like.common import context
from cyborg_like.common import states
from cyborg_like.db import placement_sync
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
HOST = cloud_module.HOST


def _feed(cloud, query='', headers=None):
    return cloud.call('GET', '/v2/availability' + query, headers=headers)


def _get(cloud, query='', headers=None):
    import webob
    request = webob.Request.blank('/v2/availability' + query,
                                  headers=headers or {})
    response = request.get_response(cloud.app)
    return response


def _counts(group):
    return tuple(group[k] for k in ('total', 'used', 'reserved', 'free'))


def _bind(cloud, model, instance):
    api = cloud.conductor_api
    device = next(d for d in cloud.list_devices() if d['model'] == model)
    rp_uuid = next(d['rp_uuid'] for d in api.list_deployables(
        ADMIN, {}, 10, None, 'created_at', 'asc')
        if d['device_id'] == device['id'])
    [arq] = api.create_arqs(ADMIN, 'gpu', None)
    api.bind_arqs(ADMIN, {arq['uuid']: {
        'hostname': HOST, 'device_rp_uuid': rp_uuid,
        'instance_uuid': instance, 'project_id': None}})
    cloud.wait_for(lambda: api.get_arq(ADMIN, arq['uuid'])['state']
                   in states.RESOLVED)
    return arq


def test_counts_of_a_known_fleet(cloud):
    status, feed = _feed(cloud)
    assert status == 200
    assert feed['group_by'] == ['resource_class', 'vendor', 'model', 'host']
    groups = {(g['resource_class'], g['model']): _counts(g)
              for g in feed['groups']}
    assert groups == {('FPGA', 'PAC N3000'): (2, 0, 0, 2),
                      ('PGPU', 'A100'): (1, 0, 0, 1),
                      ('PGPU', 'T4'): (1, 0, 0, 1)}
    assert {g['host'] for g in feed['groups']} == {HOST}
    assert feed['totals'] == {'total': 4, 'used': 0, 'reserved': 0,
                              'free': 4}
    status, by_class = _feed(cloud, '?group_by=resource_class')
    assert [(g['resource_class'], _counts(g)) for g in by_class['groups']] \
        == [('FPGA', (2, 0, 0, 2)), ('PGPU', (2, 0, 0, 2))]
    status, by_traits = _feed(cloud, '?group_by=traits,host')
    traits = [g['traits'] for g in by_traits['groups']]
    assert ['CUSTOM_GPU_NVIDIA_A100', 'CUSTOM_MODEL_A100',
            'CUSTOM_VENDOR_0X10DE'] in traits


def test_an_unchanged_feed_is_a_304(cloud):
    first = _get(cloud)
    etag = first.headers['ETag']
    again = _get(cloud, headers={'If-None-Match': etag})
    assert (again.status_int, again.body) == (304, b'')
    assert again.headers['ETag'] == etag
    # Another grouping is another representation.
    other = _get(cloud, '?group_by=host', headers={'If-None-Match': etag})
    assert other.status_int == 200
    # A device taken out of service changes the feed.
    a100 = next(d for d in cloud.list_devices() if d['model'] == 'A100')
    cloud.conductor_api.set_device_status(ADMIN, a100['uuid'],
                                          'maintaining')
    try:
        changed = _get(cloud, headers={'If-None-Match': etag})
        assert changed.status_int == 200
        assert changed.headers['ETag'] != etag
        group = next(g for g in changed.json['groups']
                     if g['model'] == 'A100')
        assert _counts(group) == (1, 0, 1, 0)
    finally:
        cloud.conductor_api.set_device_status(ADMIN, a100['uuid'],
                                              'enabled')


def test_cursor_deltas_after_a_bind(cloud):
    cloud.conductor_api.create_device_profile(
        ADMIN, 'gpu', [{'resources:PGPU': '1'}], None)
    _, before = _feed(cloud)
    cursor = before['cursor']
    status, delta = _feed(cloud, '?since=%d' % cursor)
    assert (status, delta['hosts'], delta['groups']) == (200, [], [])
    assert delta['cursor'] == cursor
    arq = _bind(cloud, 'T4', '30000000-0000-0000-0000-0000000000a1')
    status, delta = _feed(cloud, '?since=%d' % cursor)
    assert delta['hosts'] == [HOST]
    assert delta['cursor'] > cursor
    t4 = next(g for g in delta['groups'] if g['model'] == 'T4')
    assert _counts(t4) == (1, 1, 0, 0)
    # Caught up: nothing more.
    _, caught_up = _feed(cloud, '?since=%d' % delta['cursor'])
    assert caught_up['hosts'] == []
    cloud.conductor_api.delete_arqs(ADMIN, [arq['uuid']], None, True)


AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'


def test_grouped_by_placement_aggregate(cloud):
    # Without Placement the host is in no aggregate: one null group.
    status, feed = _feed(cloud, '?group_by=aggregate')
    assert [(g['aggregate'], _counts(g)) for g in feed['groups']] == [
        (None, (4, 0, 0, 4))]
    etag = _get(cloud, '?group_by=aggregate').headers['ETag']
    # As the Placement sync writes them (upper case as Placement may keep
    # them): the host in two aggregates counts in each, the totals once.
    assert placement_sync.set_aggregates(HOST, [AGG_B, AGG_A.upper()])
    status, hosts = cloud.call('GET', '/v2/hosts')
    assert [h['aggregates'] for h in hosts['hosts']] == [[AGG_A, AGG_B]]
    changed = _get(cloud, '?group_by=aggregate',
                   headers={'If-None-Match': etag})
    assert changed.status_int == 200
    assert [(g['aggregate'], _counts(g)) for g in changed.json['groups']] \
        == [(AGG_A, (4, 0, 0, 4)), (AGG_B, (4, 0, 0, 4))]
    assert changed.json['totals'] == {'total': 4, 'used': 0,
                                      'reserved': 0, 'free': 4}
    _, by_model = _feed(cloud, '?group_by=aggregate,model')
    assert [(g['aggregate'], g['model'], g['total'])
            for g in by_model['groups']] == [
        (AGG_A, 'A100', 1), (AGG_A, 'PAC N3000', 2), (AGG_A, 'T4', 1),
        (AGG_B, 'A100', 1), (AGG_B, 'PAC N3000', 2), (AGG_B, 'T4', 1)]
    # The same aggregates again are no change: the ETag holds.
    cursor = feed['cursor']
    assert not placement_sync.set_aggregates(HOST, [AGG_A, AGG_B])
    same = _get(cloud, '?group_by=aggregate',
                headers={'If-None-Match': changed.headers['ETag']})
    assert same.status_int == 304
    # Leaving one is a change of the host, sent with its groups.
    assert placement_sync.set_aggregates(HOST, [AGG_B])
    _, delta = _feed(cloud, '?group_by=aggregate&since=%d'
                     % changed.json['cursor'])
    assert delta['hosts'] == [HOST]
    assert delta['group_by'] == ['aggregate', 'host']
    assert [(g['aggregate'], g['host'], g['free'])
            for g in delta['groups']] == [(AGG_B, HOST, 4)]
    assert delta['cursor'] > changed.json['cursor'] > cursor


@pytest.mark.parametrize('query,status', [
    ('?since=999999999', 400),          # newer than any change
    ('?since=-1', 400),
    ('?group_by=colour', 400),
    ('?group_by=', 400),
    ('?colour=red', 400),
])
def test_bad_queries(cloud, query, status):
    got, body = _feed(cloud, query)
    assert got == status, body
    assert 'error_message' in body
