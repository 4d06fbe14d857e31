"""Devices in and out of service by their health: the queries and
conditional updates of the drain circuit breaker.

Within a heartbeat batch's transaction (db/heartbeats.py), each device's
reading moves it along common/states.py ``DEVICE_SERVICE``: an unhealthy
reading drains a serving device (not bindable, Placement inventory
reserved) unless the drain circuit breaker is open, in which case the
device is only flagged; ``[health] recovery_checks`` healthy readings in a
row return it to service. When to drain, flag or recover is the
conductor's policy (conductor/drain_breaker.py), passed in; here the
automatic drains are counted per host and fleet-wide over ``[health]
breaker_window`` in ``health_drains`` and the devices moved: a storm of
false alarms drains a bounded number of devices and flags the rest.

Steady state (healthy devices in service) costs no statement here; only
devices whose reading may move them are read again, locked, so two
conductors writing beats of one host cannot both move a device.
"""

import collections
import datetime

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import hosts
from cyborg_like.db import models

DEV = models.Device

# What the conductor announces of a move: (uuid, hostname, event, new
# state, reasons, operator status).
Move = collections.namedtuple(
    'Move', 'uuid hostname event state reasons status')


def apply(session, verdicts, breaker, now):
    """Move devices by their readings; return the moves made.

    ``verdicts``: ``(device id, healthy, reasons)`` of this batch, read
    with ``service_state``; ``breaker``: what the readings do, the
    conductor's policy (conductor/drain_breaker.py ``DrainBreaker``).
    """
    candidates = {device_id: (healthy, reasons)
                  for device_id, healthy, reasons, state in verdicts
                  if not healthy or state != states.SERVING}
    if not candidates:
        return []
    rows = session.execute(
        sa.select(DEV.id, DEV.uuid, DEV.hostname, DEV.status,
                  DEV.service_state, DEV.healthy_checks)
        .where(DEV.id.in_(sorted(candidates))).order_by(DEV.id)
        .with_for_update()).all()
    asked = breaker.triage(rows, candidates)
    drain, flag = breaker.split(
        asked.drain,
        lambda: drains_within(session, breaker.window, now))
    moves = (_move(session, states.DRAIN, drain, now)
             + _move(session, states.FLAG,
                     [(r, why) for r, why in flag
                      if r.service_state == states.SERVING], now)
             + _move(session, states.RECOVER, asked.recover, now))
    held = {row.id: row.healthy_checks for row in rows}
    _count(session, {i: n for i, n in asked.checks.items() if n != held[i]})
    if drain:
        session.execute(sa.insert(models.HealthDrain), [
            {'device_id': row.id, 'hostname': row.hostname,
             'drained_at': now} for row, _why in drain])
    return moves


def drains_within(session, window, now):
    """Automatic drains in the last ``window`` seconds: ({host: count},
    fleet count). Older ones are forgotten here."""
    cutoff = now - datetime.timedelta(seconds=window)
    session.execute(sa.delete(models.HealthDrain).where(
        models.HealthDrain.drained_at < cutoff))
    return _counts(session, cutoff)


def _counts(session, cutoff):
    per_host = dict(session.execute(
        sa.select(models.HealthDrain.hostname, sa.func.count())
        .where(models.HealthDrain.drained_at >= cutoff)
        .group_by(models.HealthDrain.hostname)).all())
    return per_host, sum(per_host.values())


def _move(session, event, rows, now):
    if not rows:
        return []
    target = states.DEVICE_SERVICE.target(event)
    session.execute(
        sa.update(DEV)
        .where(DEV.id.in_([row.id for row, _why in rows]),
               DEV.service_state.in_(states.DEVICE_SERVICE.sources(event)))
        .values(service_state=target, healthy_checks=0,
                service_changed_at=now)
        .execution_options(synchronize_session=False))
    return [Move(row.uuid, row.hostname, event, target, reasons, row.status)
            for row, reasons in rows]


def _count(session, checks):
    for value in sorted(set(checks.values())):
        session.execute(
            sa.update(DEV)
            .where(DEV.id.in_([i for i, n in checks.items() if n == value]))
            .values(healthy_checks=value)
            .execution_options(synchronize_session=False))


def drain_counts(window, session=None):
    """The automatic drains of the last ``window`` seconds: ({host:
    count}, fleet count); reads only (conductor/drain_breaker.py
    ``status`` says whether they open the breaker)."""
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=window)
    if session is None:
        with api.reader() as session:
            return _counts(session, cutoff)
    return _counts(session, cutoff)
