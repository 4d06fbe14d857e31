"""Devices drained and returned to service by their health readings, and
the circuit breaker that bounds automatic drains (db/health.py)."""

import datetime
import types

import pytest
import sqlalchemy as sa

from cyborg_like.conductor import drain_breaker
from cyborg_like.db import api as db_api
from cyborg_like.db import devices
from cyborg_like.db import health
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts
from cyborg_like.db import models
from tests.unit.test_db_inventory import _apply
from tests.unit.test_db_inventory import _beat
from tests.unit.test_db_inventory import _gpu
from tests.unit.test_db_inventory import _reading
from tests.unit.test_db_inventory import count_queries


def _status(policy):
    """The breaker as the fleet metrics report it."""
    return drain_breaker.DrainBreaker(policy).status(
        *health.drain_counts(policy.breaker_window))


def _policy(**overrides):
    values = dict(auto_drain=True, recovery_checks=3, breaker_window=3600,
                  max_drains_per_host=4, max_drains=50)
    values.update(overrides)
    return types.SimpleNamespace(**values)


def _fleet(hosts_count, gpus):
    for h in range(hosts_count):
        _apply('h%d' % h, [_gpu(n) for n in range(1, gpus + 1)])


def _beats(readings_by_host, when=None):
    return [_beat(host, readings, when=when)
            for host, readings in readings_by_host.items()]


def _state(host, n):
    uuid = next(d['uuid'] for d in devices.list_devices(
        {'hostname': host}, 100) if d['model'] == 'GPU%d' % n)
    found = heartbeats.device_health(uuid, history_limit=1)
    return found['service_state'], found['healthy_checks']


def _ingest(readings_by_host, policy=None, when=None):
    return heartbeats.ingest(_beats(readings_by_host, when), 60,
                             drain_breaker.DrainBreaker(policy or _policy()))


def test_unhealthy_reading_drains_and_healthy_ones_return_it(migrated_db):
    _fleet(1, 2)
    _ingest({'h0': [_reading(1), _reading(2)]})
    moves = _ingest({'h0': [_reading(1, healthy=False), _reading(2)]}).moves
    assert [(m.event, m.state, m.reasons) for m in moves] == [
        ('drain', 'drained', ['2 uncorrectable ECC errors'])]
    assert _state('h0', 1) == ('drained', 0)
    assert _state('h0', 2) == ('serving', 0)
    # Two clean readings are not enough; an unhealthy one starts over.
    assert _ingest({'h0': [_reading(1), _reading(2)]}).moves == []
    assert _ingest({'h0': [_reading(1), _reading(2)]}).moves == []
    assert _state('h0', 1) == ('drained', 2)
    assert _ingest({'h0': [_reading(1, healthy=False)]}).moves == []
    assert _state('h0', 1) == ('drained', 0)
    for _ in range(2):
        assert _ingest({'h0': [_reading(1)]}).moves == []
    moves = _ingest({'h0': [_reading(1)]}).moves
    assert [(m.event, m.state, m.status) for m in moves] == [
        ('recover', 'serving', 'enabled')]
    assert _state('h0', 1) == ('serving', 0)


def test_recovery_leaves_an_operator_disabled_device_disabled(migrated_db):
    _fleet(1, 1)
    uuid = devices.list_devices({}, 10)[0]['uuid']
    devices.set_status(uuid, 'maintaining')
    _ingest({'h0': [_reading(1, healthy=False)]})
    moves = []
    for _ in range(3):
        moves += _ingest({'h0': [_reading(1)]}).moves
    assert [(m.event, m.status) for m in moves] == [
        ('recover', 'maintaining')]
    assert devices.get_device(uuid)['status'] == 'maintaining'


def test_breaker_per_host_flags_past_its_limit(migrated_db):
    _fleet(2, 4)
    policy = _policy(max_drains_per_host=2)
    moves = _ingest({'h0': [_reading(n, healthy=False)
                            for n in range(1, 5)],
                     'h1': [_reading(1, healthy=False)]}, policy).moves
    assert sorted((m.hostname, m.event) for m in moves) == [
        ('h0', 'drain'), ('h0', 'drain'), ('h0', 'flag'), ('h0', 'flag'),
        ('h1', 'drain')]
    status = _status(policy)
    assert (status['drains'], status['open']) == (3, False)
    assert status['hosts'] == {'h0': {'drains': 2, 'open': True},
                               'h1': {'drains': 1, 'open': False}}


def test_a_fleet_wide_false_alarm_drains_only_the_budget(migrated_db):
    _fleet(10, 3)
    policy = _policy(max_drains=5)
    storm = {'h%d' % h: [_reading(n, healthy=False) for n in range(1, 4)]
             for h in range(10)}
    moves = _ingest(storm, policy).moves
    events = [m.event for m in moves]
    assert (events.count('drain'), events.count('flag')) == (5, 25)
    assert _status(policy)['open'] is True
    # Flagged devices stay bindable: only the drained are reserved.
    with db_api.reader() as session:
        drained = session.scalar(sa.select(sa.func.count()).where(
            models.Device.service_state == 'drained'))
    assert drained == 5


def test_breaker_closes_after_its_window(migrated_db):
    _fleet(1, 3)
    policy = _policy(max_drains=1, breaker_window=60)
    old = hosts.utcnow() - datetime.timedelta(seconds=120)
    _ingest({'h0': [_reading(1, healthy=False),
                    _reading(2, healthy=False)]}, policy)
    assert (_state('h0', 1)[0], _state('h0', 2)[0]) == ('drained', 'flagged')
    # The drain ages out of the window: the breaker closes, and a device
    # still unhealthy is drained at its next reading.
    with db_api.writer() as session:
        session.execute(sa.update(models.HealthDrain).values(drained_at=old))
    assert _status(policy)['open'] is False
    moves = _ingest({'h0': [_reading(1, healthy=False),
                            _reading(2, healthy=False)]}, policy).moves
    assert [(m.event, m.state) for m in moves] == [('drain', 'drained')]
    assert _state('h0', 2)[0] == 'drained'


def test_without_auto_drain_unhealthy_devices_are_flagged(migrated_db):
    _fleet(1, 1)
    policy = _policy(auto_drain=False)
    moves = _ingest({'h0': [_reading(1, healthy=False)]}, policy).moves
    assert [(m.event, m.state) for m in moves] == [('flag', 'flagged')]
    assert _status(policy)['drains'] == 0
    for _ in range(3):
        moves = _ingest({'h0': [_reading(1)]}, policy).moves
    assert [m.event for m in moves] == ['recover']


@pytest.mark.parametrize('hosts_count', [2, 30])
def test_a_storm_costs_the_same_queries_whatever_its_size(migrated_db,
                                                          hosts_count):
    _fleet(hosts_count, 2)
    storm = _beats({'h%d' % h: [_reading(1, healthy=False),
                                _reading(2, healthy=False)]
                    for h in range(hosts_count)})
    with count_queries() as queries:
        heartbeats.ingest(storm, 60,
                          drain_breaker.DrainBreaker(_policy(max_drains=3)))
    # The heartbeat statements (12 at most, with the generations of
    # devices and ARQs, and the health columns written apart from the
    # readings), then: lock the candidates, forget old drains, count
    # drains, move (drain, flag), insert drains.
    assert queries['n'] <= 18, queries['statements']
