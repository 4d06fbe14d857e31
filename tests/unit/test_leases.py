"""Lease windows (common/recurrence.py), their overlap check and their
state machines, without a service."""

import datetime
import itertools

import pytest
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import recurrence
from cyborg_like.common import states
from cyborg_like.conductor import lease_rules
from cyborg_like.conductor import lease_steps as leases
from cyborg_like.db import api as db_api
from cyborg_like.db import hosts
from cyborg_like.db import models
from tests.unit.test_db_inventory import _apply
from tests.unit.test_db_inventory import _gpu
from tests.unit.test_db_inventory import count_queries

D = datetime.datetime
WEEKNIGHTS = 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR'


def _nights(start, end, after, until, rule=WEEKNIGHTS):
    return recurrence.windows(start, end, 'Europe/Berlin', rule, after,
                              until)


def test_weeknights_keep_their_local_hours_across_the_march_change():
    # Berlin goes from CET (UTC+1) to CEST (UTC+2) on Sunday 28 March
    # 2027: 20:00-06:00 stays 20:00-06:00 local, so one hour earlier in
    # UTC, and the night of Friday 26th lasts 10 hours still.
    found = _nights(D(2027, 3, 22, 20), D(2027, 3, 23, 6), D(2027, 3, 25),
                    D(2027, 3, 31))
    assert found == [
        (D(2027, 3, 24, 19), D(2027, 3, 25, 5)),    # Wed night, CET
        (D(2027, 3, 25, 19), D(2027, 3, 26, 5)),    # Thu night
        (D(2027, 3, 26, 19), D(2027, 3, 27, 5)),    # Fri night
        (D(2027, 3, 29, 18), D(2027, 3, 30, 4)),    # Mon night, CEST
        (D(2027, 3, 30, 18), D(2027, 3, 31, 4)),    # Tue night
    ]


def test_a_night_across_the_change_is_an_hour_shorter_or_longer():
    # Daily, so one night spans each change: 28 March 2027 (9 hours in
    # UTC) and 31 October 2027 (11 hours).
    march = _nights(D(2027, 3, 27, 20), D(2027, 3, 28, 6), D(2027, 3, 27),
                    D(2027, 3, 28, 12), rule='FREQ=DAILY')
    assert march == [(D(2027, 3, 27, 19), D(2027, 3, 28, 4))]
    october = _nights(D(2027, 10, 30, 20), D(2027, 10, 31, 6),
                      D(2027, 10, 30), D(2027, 11, 1, 12),
                      rule='FREQ=DAILY')
    assert october == [(D(2027, 10, 30, 18), D(2027, 10, 31, 5)),
                       (D(2027, 10, 31, 19), D(2027, 11, 1, 5))]
    assert [e - s for s, e in october] == [datetime.timedelta(hours=11),
                                           datetime.timedelta(hours=10)]


def test_a_one_off_window_and_the_end_of_a_recurrence():
    one = recurrence.windows(D(2027, 1, 1, 9), D(2027, 1, 1, 17), 'UTC',
                             None, D(2026, 12, 1), D(2027, 2, 1))
    assert one == [(D(2027, 1, 1, 9), D(2027, 1, 1, 17))]
    assert recurrence.windows(D(2027, 1, 1, 9), D(2027, 1, 1, 17), 'UTC',
                              None, D(2027, 1, 2), D(2027, 2, 1)) == []
    # A window under way at ``after`` is among them.
    assert recurrence.windows(D(2027, 1, 1, 9), D(2027, 1, 1, 17), 'UTC',
                              None, D(2027, 1, 1, 12), D(2027, 2, 1)) == one
    assert recurrence.last_start(D(2027, 1, 1, 9), 'UTC',
                                 'FREQ=DAILY;COUNT=3') == D(2027, 1, 3, 9)
    assert recurrence.last_start(D(2027, 1, 1, 9), 'UTC',
                                 'FREQ=DAILY') is None
    until = recurrence.windows(
        D(2027, 1, 1, 9), D(2027, 1, 1, 10), 'Europe/Berlin',
        'FREQ=DAILY;UNTIL=20270103T235959Z', D(2026, 12, 1), D(2027, 2, 1))
    assert [s for s, _ in until] == [D(2027, 1, n, 8) for n in (1, 2, 3)]


@pytest.mark.parametrize('start,end,zone,rule', [
    (D(2027, 1, 1, 9), D(2027, 1, 1, 8), 'UTC', None),
    (D(2027, 1, 1, 9), D(2027, 1, 1, 10), 'Nowhere/Atlantis', None),
    (D(2027, 1, 1, 9), D(2027, 1, 1, 10), 'UTC', 'FREQ=FORTNIGHTLY'),
    (D(2027, 1, 1, 9), D(2027, 1, 1, 10), 'UTC',
     'DTSTART:20270101T090000;FREQ=DAILY'),
    (D(2027, 1, 1, 9), D(2028, 6, 1, 10), 'UTC', None),
], ids=['end-before-start', 'unknown-zone', 'unknown-frequency',
        'dtstart-in-the-rule', 'longer-than-a-year'])
def test_what_is_no_window_is_refused(start, end, zone, rule):
    with pytest.raises(exception.Invalid):
        recurrence.check(start, end, zone, rule)


def test_overlapping_occurrences_and_too_many_are_refused():
    with pytest.raises(exception.Invalid, match='overlap'):
        recurrence.windows(D(2027, 1, 1, 9), D(2027, 1, 2, 10), 'UTC',
                           'FREQ=DAILY', D(2027, 1, 1), D(2027, 1, 10))
    with pytest.raises(exception.Invalid, match='max_windows'):
        recurrence.windows(D(2027, 1, 1, 9), D(2027, 1, 1, 9, 1), 'UTC',
                           'FREQ=MINUTELY;INTERVAL=2', D(2027, 1, 1),
                           D(2027, 1, 10), limit=100)


GRACE = datetime.timedelta(minutes=5)


@pytest.mark.parametrize('taken,expected', [
    # Another lease's window, and the new lease's windows (sorted).
    ([('a', D(2027, 1, 1, 12), D(2027, 1, 1, 13))], None),
    ([('a', D(2027, 1, 1, 10, 30), D(2027, 1, 1, 11))], 'a'),
    # Touching, grace included, is overlapping: the first lessee's
    # requests are unbound only after the grace.
    ([('a', D(2027, 1, 1, 8), D(2027, 1, 1, 9, 58))], 'a'),
    ([('a', D(2027, 1, 1, 8), D(2027, 1, 1, 9, 55))], None),
    ([('a', D(2027, 1, 1, 11, 4), D(2027, 1, 1, 12))], 'a'),
    ([('a', D(2027, 1, 1, 6), D(2027, 1, 1, 7)),
      ('b', D(2027, 1, 2, 10, 30), D(2027, 1, 2, 10, 45))], 'b'),
])
def test_the_overlap_check_merges_sorted_windows(taken, expected):
    mine = [(D(2027, 1, 1, 10), D(2027, 1, 1, 11)),
            (D(2027, 1, 2, 10), D(2027, 1, 2, 11))]
    clash = lease_rules.clash(taken, mine, GRACE)
    assert (clash and clash[0]) == expected


def test_the_lease_machines():
    assert {e: (set(states.LEASE.sources(e)), states.LEASE.target(e))
            for e in states.LEASE.events} == {
        'give_back': ({'active'}, 'returned'),
        'revoke': ({'active'}, 'revoked'),
        'expire': ({'active'}, 'expired')}
    window = states.LEASE_WINDOW
    assert {e: (set(window.sources(e)), window.target(e))
            for e in window.events} == {
        'open': ({'scheduled'}, 'open'),
        'notify': ({'open'}, 'noticed'),
        'close': ({'scheduled', 'open', 'noticed'}, 'closed'),
        'cancel': ({'scheduled', 'open', 'noticed'}, 'cancelled')}
    # Nothing leaves an ended lease or window.
    for machine in (states.LEASE, window):
        for state, event in itertools.product(machine.terminal,
                                              machine.events):
            assert not machine.allows(state, event)
    assert set(leases.LIVE_WINDOWS) == {'scheduled', 'open', 'noticed'}


@pytest.mark.parametrize('count', [2, 12])
def test_a_page_of_leases_costs_the_same_queries_whatever_its_size(
        migrated_db, count):
    _apply('h1', [_gpu(n) for n in range(1, count + 1)])
    now = hosts.utcnow()
    for n in range(count):
        start = now + datetime.timedelta(days=1, hours=n)
        leases.create({'resource_class': 'PGPU', 'count': 1,
                       'start': start, 'end': start
                       + datetime.timedelta(minutes=30),
                       'timezone': 'UTC', 'recurrence': 'FREQ=DAILY'},
                      'p%d' % n, now, 28, 2000, 300)
    with count_queries() as queries:
        page = leases.list_leases({}, 100, None, 'created_at', 'asc', now)
    assert len(page) == count
    assert [len(x['devices']) for x in page] == [1] * count
    assert all(x['window']['state'] == 'scheduled' for x in page)
    # The page, its devices, its next windows.
    assert queries['n'] == 3, queries['statements']


def _starts(uuid):
    with db_api.reader() as session:
        return session.scalars(
            sa.select(models.LeaseWindow.starts_at)
            .join(models.Lease).where(models.Lease.uuid == uuid)).all()


def test_the_horizon_moves_on_once_a_day_and_skips_taken_windows(
        migrated_db):
    _apply('h1', [_gpu(1)])
    now = hosts.utcnow().replace(microsecond=0)
    start = now + datetime.timedelta(hours=1)
    hour = datetime.timedelta(hours=1)
    day = datetime.timedelta(days=1)
    weekly = {'resource_class': 'PGPU', 'count': 1, 'start': start,
              'end': start + hour, 'timezone': 'UTC',
              'recurrence': 'FREQ=WEEKLY'}
    first = leases.create(weekly, 'p1', now, 3, 2000, 0)
    assert leases.plan(now, 3, 2000, 0) == 0        # written 3 days ahead
    # A one-off lease at a time the weekly one is not written yet: the
    # weekly one is written that far first, and wins.
    one_off = dict(weekly, start=start + 7 * day, end=start + 7 * day + hour,
                   recurrence=None)
    with pytest.raises(exception.LeaseConflict) as refused:
        leases.create(one_off, 'p2', now + 5 * day, 3, 2000, 0)
    assert refused.value.kwargs['lease'] == first['uuid']
    # Every five days from day 1: it first meets the weekly lease on day
    # 21, far beyond both horizons at creation.
    second = leases.create(dict(weekly, start=start + day,
                                end=start + day + hour,
                                recurrence='FREQ=DAILY;INTERVAL=5'),
                           'p2', now, 3, 2000, 0)
    for n in range(1, 24):
        leases.plan(now + n * day, 3, 2000, 0)
    # Written a day past the horizon (now + 27 days); the older lease took
    # day 21.
    assert max(_starts(first['uuid'])) == start + 21 * day
    assert start + 21 * day not in _starts(second['uuid'])
    assert {start + n * day for n in (16, 26)} <= set(
        _starts(second['uuid']))
    # Once written past the horizon, nothing more to do for a day.
    assert leases.plan(now + 23 * day + 12 * hour, 3, 2000, 0) == 0


@pytest.mark.parametrize('count', [2, 12])
def test_notices_before_windows_cost_the_same_queries_whatever_their_number(
        migrated_db, count):
    """Another project's ARQ bound to each of ``count`` devices leased by
    as many leases whose windows start in 10 minutes: one query finds
    them all, one records their notice; a second run finds none."""
    _apply('h1', [_gpu(n) for n in range(1, count + 1)])
    now = hosts.utcnow().replace(microsecond=0)
    start = now + datetime.timedelta(minutes=10)
    for n in range(count):
        leases.create({'resource_class': 'PGPU', 'count': 1,
                       'start': start,
                       'end': start + datetime.timedelta(hours=1),
                       'timezone': 'UTC'}, 'p%d' % n, now, 28, 2000, 300)
    with db_api.writer() as session:
        profile = models.DeviceProfile(uuid='dp', name='gpu',
                                       profile_json='{}')
        session.add(profile)
        session.flush()
        handles = session.execute(sa.select(
            models.AttachHandle.id, models.AttachHandle.deployable_id)).all()
        session.add_all([models.ExtARQ(
            uuid='arq-%d' % n, state=states.BOUND,
            device_profile_id=profile.id, device_profile_group_id=0,
            project_id='other', attach_handle_id=handle.id,
            deployable_id=handle.deployable_id,
            instance_uuid='vm-%d' % n) for n, handle in enumerate(handles)])
    with count_queries() as queries:
        notices = leases.warn_due(now, 900)
    assert len(notices) == count
    assert {a[0] for n in notices for a in n['arqs']} == {
        'arq-%d' % n for n in range(count)}
    assert {n['project_id'] for n in notices} == {'other'}
    # The holders, then their notice (one window start), then the
    # generation of ARQs (db/generations.py).
    assert queries['n'] == 3, queries['statements']
    with db_api.reader() as session:
        assert set(session.scalars(sa.select(
            models.ExtARQ.lease_starts_at))) == {start}
    assert leases.warn_due(now + datetime.timedelta(minutes=5), 900) == []
