"""Host aggregates from a real Placement: the sync reads the compute node
provider's aggregates (one GET per sync of a host) onto the host, where
GET /v2/hosts shows them, the availability feed groups by them and a
rollout selects by them (docs/availability.md, docs/rollouts.md)."""

from cyborg_like.db import placement_sync
from tests.functional import cloud as cloud_module
from tests.placement.test_placement_sync import _cloud
from tests.placement.test_placement_sync import _compute_node
from tests.placement.test_placement_sync import _sync

HOST = cloud_module.HOST
AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'
AGG_C = 'c0000000-0000-4000-8000-00000000000c'


def _put_aggregates(placement, cn, aggregates):
    """As Nova mirrors a host aggregate (microversion 1.19 on: with the
    provider's generation)."""
    generation = placement.get('/resource_providers/%s' % cn)['generation']
    placement.request('PUT', '/resource_providers/%s/aggregates' % cn, {
        'aggregates': aggregates,
        'resource_provider_generation': generation}, expect=200)


def _host_aggregates(cloud):
    status, body = cloud.call('GET', '/v2/hosts')
    assert status == 200, body
    return {h['hostname']: h['aggregates'] for h in body['hosts']}


def _by_aggregate(cloud):
    status, feed = cloud.call('GET', '/v2/availability?group_by=aggregate')
    assert status == 200, feed
    return feed, [(g['aggregate'], g['total'], g['free'])
                  for g in feed['groups']]


def _dry_run(cloud, selector):
    status, plan = cloud.call('POST', '/v2/rollouts', {
        'kind': 'bitstream', 'image': 'bs-crypto-1', 'dry_run': True,
        'selector': selector})
    assert status == 200, plan
    return plan['targets'], [(w['first_host'], w['targets'])
                             for w in plan['waves']]


def test_aggregates_of_the_compute_node(placement):
    cn = _compute_node(placement)
    # Placement keeps an aggregate's UUID as it was given: any case.
    _put_aggregates(placement, cn, [AGG_A, AGG_B.upper()])
    reads = '/resource_providers/%s/aggregates' % cn
    cloud = _cloud(placement).start()
    try:
        assert _sync(cloud)['synced'] == [HOST]
        assert placement.served('GET', reads) == 1
        assert _host_aggregates(cloud) == {HOST: [AGG_A, AGG_B]}

        # In both: every device counts in each, the totals once.
        feed, groups = _by_aggregate(cloud)
        assert groups == [(AGG_A, 4, 4), (AGG_B, 4, 4)]
        assert feed['totals']['total'] == 4

        # The two regions of the host are in AGG_A; nothing is in AGG_C.
        assert _dry_run(cloud, {'aggregates': [AGG_A]}) == (
            2, [(HOST, 1), (HOST, 1)])
        assert _dry_run(cloud, {'aggregates': [AGG_C]}) == (0, [])

        # Placement alone changed: a clean host is not synced, so it keeps
        # what the last sync read ...
        _put_aggregates(placement, cn, [AGG_C])
        assert _sync(cloud) == {'synced': [], 'pending': []}
        assert placement.served('GET', reads) == 1
        assert _host_aggregates(cloud) == {HOST: [AGG_A, AGG_B]}
        # ... until its next sync, which reads them again, once, and tells
        # the feed's pollers.
        placement_sync.mark_dirty_now([HOST])
        cursor = feed['cursor']
        assert _sync(cloud)['synced'] == [HOST]
        assert placement.served('GET', reads) == 2
        assert _host_aggregates(cloud) == {HOST: [AGG_C]}
        status, delta = cloud.call(
            'GET', '/v2/availability?group_by=aggregate&since=%d' % cursor)
        assert delta['hosts'] == [HOST]
        assert [(g['aggregate'], g['total']) for g in delta['groups']] == [
            (AGG_C, 4)]
        assert _dry_run(cloud, {'aggregates': [AGG_A, AGG_C]})[0] == 2
        assert _dry_run(cloud, {'aggregates': [AGG_A]})[0] == 0

        # Out of every aggregate: one null group.
        _put_aggregates(placement, cn, [])
        placement_sync.mark_dirty_now([HOST])
        _sync(cloud)
        assert _host_aggregates(cloud) == {HOST: []}
        assert _by_aggregate(cloud)[1] == [(None, 4, 4)]
    finally:
        cloud.stop()


def test_no_compute_node_is_no_aggregate(placement):
    # Nova has not registered the host (or it went): the sync reads no
    # aggregate and the host is in none.
    cloud = _cloud(placement).start()
    try:
        placement_sync.set_aggregates(HOST, [AGG_A])
        assert _host_aggregates(cloud) == {HOST: [AGG_A]}
        assert _sync(cloud)['pending'] == [HOST]
        assert _host_aggregates(cloud) == {HOST: []}
        assert _by_aggregate(cloud)[1] == [(None, 4, 4)]
    finally:
        cloud.stop()
