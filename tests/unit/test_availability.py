"""The availability feed's facts, counts, grouping and change log."""

import datetime

import pytest
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.conductor import availability as feed_lib
from cyborg_like.db import api as db_api
from cyborg_like.db import availability
from cyborg_like.db import devices
from cyborg_like.db import hosts
from cyborg_like.db import models
from cyborg_like.db import placement_sync
from tests.unit.test_db_inventory import _apply
from tests.unit.test_db_inventory import _beat
from tests.unit.test_db_inventory import _gpu
from tests.unit.test_db_inventory import _ingest
from tests.unit.test_db_inventory import count_queries


def _feed(since=None, group_by=('resource_class', 'host'), known=None,
          feed=None):
    return (feed or feed_lib.Feed('site-a', 60)).get(list(group_by), since,
                                                      known)


def _fleet(hosts_count, gpus):
    for h in range(hosts_count):
        _apply('h%d' % h, [_gpu(n, handles=2) for n in range(1, gpus + 1)])
    _ingest([_beat('h%d' % h) for h in range(hosts_count)], 60)


def test_counts_follow_status_and_liveness(migrated_db):
    _fleet(2, 2)
    result = _feed()
    assert [(g['host'], g['total'], g['free']) for g in result['groups']] \
        == [('h0', 4, 4), ('h1', 4, 4)]
    assert result['totals'] == {'total': 8, 'used': 0, 'reserved': 0,
                                'free': 8}
    uuid = devices.list_devices({'hostname': 'h0'}, 10)[0]['uuid']
    devices.set_status(uuid, 'maintaining')
    h0 = _feed()['groups'][0]
    assert (h0['reserved'], h0['free']) == (2, 2)
    # A host without a recent heartbeat offers nothing.
    with db_api.writer() as session:
        session.execute(sa.update(models.Host).where(
            models.Host.hostname == 'h1').values(
            last_heartbeat=hosts.utcnow() - datetime.timedelta(hours=1)))
    h1 = _feed()['groups'][1]
    assert (h1['host'], h1['reserved'], h1['free']) == ('h1', 4, 0)


def test_a_delta_names_the_changed_hosts_only(migrated_db):
    _fleet(3, 1)
    cursor = _feed()['cursor']
    uuid = devices.list_devices({'hostname': 'h2'}, 10)[0]['uuid']
    devices.set_status(uuid, 'maintaining')
    delta = _feed(since=cursor)
    assert (delta['since'], delta['hosts']) == (cursor, ['h2'])
    assert [(g['host'], g['reserved']) for g in delta['groups']] == [
        ('h2', 2)]
    assert delta['cursor'] > cursor
    # A delta is by host, asked for or not.
    by_class = _feed(since=cursor, group_by=('resource_class',))
    assert by_class['group_by'] == ['resource_class', 'host']
    assert [g['host'] for g in by_class['groups']] == ['h2']
    with pytest.raises(exception.AvailabilityCursorInvalid):
        _feed(since=delta['cursor'] + 1)


def test_an_unchanged_feed_reads_no_device(migrated_db):
    _fleet(2, 2)
    cursor = _feed()['cursor']
    with count_queries() as queries:
        assert _feed(known=cursor) == {'cursor': cursor, 'unchanged': True}
    assert queries['n'] == 1, queries['statements']


def test_pruning_keeps_the_newest_and_expires_old_cursors(migrated_db):
    _fleet(2, 1)
    first = _feed()['cursor']
    uuid = devices.list_devices({'hostname': 'h0'}, 10)[0]['uuid']
    devices.set_status(uuid, 'maintaining')
    devices.set_status(uuid, 'enabled')
    newest = _feed()['cursor']
    with db_api.writer() as session:
        session.execute(sa.update(models.AvailabilityChange).values(
            changed_at=hosts.utcnow() - datetime.timedelta(days=2)))
    availability.prune(retention=3600)
    with db_api.reader() as session:
        left = session.scalars(sa.select(models.AvailabilityChange.id)).all()
    assert left == [newest]
    assert _feed()['cursor'] == newest
    with pytest.raises(exception.AvailabilityCursorExpired):
        _feed(since=first)
    assert _feed(since=newest)['hosts'] == []


@pytest.mark.parametrize('hosts_count', [2, 20])
def test_the_feed_costs_the_same_queries_whatever_the_fleet(migrated_db,
                                                            hosts_count):
    _fleet(hosts_count, 2)
    with count_queries() as queries:
        _feed(group_by=('traits', 'function', 'host'))
    # The cursor (what whole answers are kept by), then the facts: cursor,
    # devices leased, deployables, attributes, handle counts (no bitstream
    # loaded).
    assert queries['n'] == 6, queries['statements']


def test_a_whole_feed_is_kept_by_cursor(migrated_db):
    _fleet(3, 2)
    feed = feed_lib.Feed('site-a', 60)
    first = _feed(feed=feed)
    with count_queries() as queries:
        assert _feed(feed=feed) is first
    assert queries['n'] == 1, queries['statements']   # the cursor only
    uuid = devices.list_devices({'hostname': 'h1'}, 10)[0]['uuid']
    devices.set_status(uuid, 'maintaining')
    changed = _feed(feed=feed)
    assert changed['cursor'] > first['cursor']
    assert changed['totals']['reserved'] == 2



AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'


@pytest.mark.parametrize('hosts_count', [3, 30])
def test_grouped_by_aggregate_and_kept_answers_follow_them(migrated_db,
                                                           hosts_count):
    _fleet(hosts_count, 2)      # 4 accelerators a host
    feed = feed_lib.Feed('site-a', 60)
    by = ('aggregate', 'resource_class')
    first = _feed(group_by=by, feed=feed)
    assert [(g['aggregate'], g['total']) for g in first['groups']] == [
        (None, 4 * hosts_count)]
    # As the Placement sync writes them: h0 in A, h1 in both, the rest in
    # none. The kept whole answer is not served again.
    placement_sync.set_aggregates('h0', [AGG_A])
    placement_sync.set_aggregates('h1', [AGG_B, AGG_A])
    with count_queries() as queries:
        grouped = _feed(group_by=by, feed=feed)
    assert queries['n'] == 6, queries['statements']
    assert grouped['cursor'] > first['cursor']
    assert [(g['aggregate'], g['total']) for g in grouped['groups']] == [
        (None, 4 * (hosts_count - 2)), (AGG_A, 8), (AGG_B, 4)]
    # Each device once in the totals, not once per aggregate.
    assert grouped['totals']['total'] == 4 * hosts_count
    assert sum(g['total'] for g in grouped['groups']) == \
        4 * hosts_count + 4
    # The same aggregates again: no change, the kept answer.
    assert not placement_sync.set_aggregates('h1', [AGG_A, AGG_B])
    assert _feed(group_by=by, feed=feed) is grouped
    delta = _feed(since=first['cursor'], group_by=('aggregate',))
    assert delta['hosts'] == ['h0', 'h1']
    assert [(g['aggregate'], g['host']) for g in delta['groups']] == [
        (AGG_A, 'h0'), (AGG_A, 'h1'), (AGG_B, 'h1')]
