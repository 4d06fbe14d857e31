"""Leases of one device created at once, on real MariaDB and PostgreSQL
(SQLite serialises writers, so its race cannot fail): whatever the
interleaving, exactly one of overlapping leases is granted, and each
refusal names a lease that holds the device; and lease periodics run at
once tell another project's holder of the device once and preempt it once
(docs/leases.md)."""

import concurrent.futures
import datetime
import threading

import pytest
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.conductor import lease_steps as leases
from cyborg_like.db import api as db_api
from cyborg_like.db import arqs
from cyborg_like.db import hosts
from cyborg_like.db import models


pytestmark = pytest.mark.integration

THREADS = 8


def _device_uuid():
    with db_api.reader() as session:
        return session.scalar(sa.select(models.Device.uuid))


def _race(values_of):
    start = threading.Barrier(THREADS)
    now = hosts.utcnow()

    def create(n):
        start.wait()
        try:
            # As the lessor's (the world's own ARQs may hold the device).
            return leases.create(values_of(n), 'project-%d' % n, now, 28,
                                 2000, 300, preempt=True)
        except exception.LeaseConflict as error:
            return error

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(create, range(THREADS)))


@pytest.mark.parametrize('by', ['devices', 'profile'])
def test_one_of_overlapping_leases_made_at_once_is_granted(world, by):
    day = (hosts.utcnow() + datetime.timedelta(days=3 if by == 'devices'
                                               else 5)).date()

    def values(n):
        # Every one overlaps every other: a quarter hour apart, an hour
        # long.
        start = datetime.datetime.combine(day, datetime.time(
            10, 15 * (n % 4)))
        found = {'start': start, 'end': start + datetime.timedelta(hours=1),
                 'timezone': 'UTC'}
        if by == 'devices':
            found['devices'] = [_device_uuid()]
        else:
            found.update(resource_class='FPGA', traits={}, count=1)
        return found

    outcomes = _race(values)
    granted = [o for o in outcomes if isinstance(o, dict)]
    refused = [o for o in outcomes if isinstance(o, exception.LeaseConflict)]
    assert len(granted) == 1, outcomes
    assert len(refused) == THREADS - 1
    assert {e.kwargs['lease'] for e in refused} == {granted[0]['uuid']}


def _at_once(call):
    start = threading.Barrier(THREADS)

    def run(_):
        start.wait()
        return call()

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(run, range(THREADS)))


def _starts_noticed():
    with db_api.reader() as session:
        return dict(session.execute(sa.select(
            models.ExtARQ.uuid, models.ExtARQ.lease_starts_at)).all())


def test_periodics_at_once_tell_and_preempt_a_holder_once(world):
    """Eight conductors' lease periodics at the same boundaries: another
    project's ARQ Nova bound to the device is told once and marked once
    for Nova to release (never unbound behind Nova's back); a notice is
    withdrawn when its lease is given back (docs/leases.md)."""
    now = hosts.utcnow().replace(microsecond=0)
    minute = datetime.timedelta(minutes=1)
    device = _device_uuid()
    held = world.new_arq()
    assert world.bind(held, 'vm-held') == states.FINISH
    leases.create({'devices': [device], 'start': now + 10 * minute,
                   'end': now + 70 * minute, 'timezone': 'UTC'},
                  'lessee', now, 28, 2000, 300, preempt=True)
    told = _at_once(lambda: leases.warn_due(now, 900))
    assert [a[0] for found in told for n in found for a in n['arqs']] == [
        held]
    assert _starts_noticed()[held] == now + 10 * minute
    outcomes = _at_once(lambda: leases.preempt_due(now + 16 * minute, 300))
    assert [u for _, unbound, _ in outcomes for u in unbound] == []
    assert [a[:2] for _, _, asked in outcomes for a in asked] == [
        (held, 'vm-held')]
    assert leases.awaiting_nova() == [(held, 'vm-held')]
    world.check_invariants()
    # Nova released it (an unbind): nothing is awaited any more.
    arqs.unbind([held])
    assert leases.awaiting_nova() == []
    assert held not in {u for u, at in _starts_noticed().items() if at}
    # Given back before its window: the notice is withdrawn.
    other = world.new_arq()
    assert world.bind(other, 'vm-other') == states.FINISH
    later = now + datetime.timedelta(days=1)
    second = leases.create({'devices': [device], 'start': later,
                            'end': later + 60 * minute, 'timezone': 'UTC'},
                           'lessee', now, 28, 2000, 300, preempt=True)
    assert leases.warn_due(later - 10 * minute, 900)[0]['lease'] == \
        second['uuid']
    assert _starts_noticed()[other] == later
    leases.end(second['uuid'], states.GIVE_BACK, now)
    assert _starts_noticed()[other] is None
