"""Devices in and out of service by their health, with a circuit breaker.

Within a heartbeat batch's transaction (db/heartbeats.py), each device's
reading moves it along common/states.py ``DEVICE_SERVICE``: an unhealthy
reading drains a serving device (not bindable, Placement inventory
reserved) unless the drain circuit breaker is open, in which case the
device is only flagged; ``[health] recovery_checks`` healthy readings in a
row return it to service. The breaker counts automatic drains per host and
fleet-wide over ``[health] breaker_window`` in ``health_drains``: a storm
of false alarms drains a bounded number of devices and flags the rest.

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


def apply(session, verdicts, policy, now):
    """Move devices by their readings; return the moves made.

    ``verdicts``: ``(device id, healthy, reasons)`` of this batch, read
    with ``service_state``; ``policy``: the ``[health]`` options.
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
    want_drain, recover, counts = [], [], {}
    for row in rows:
        healthy, reasons = candidates[row.id]
        if not healthy:
            counts[row.id] = 0
            if row.service_state != states.DRAINED:
                want_drain.append((row, reasons))
        elif row.healthy_checks + 1 >= policy.recovery_checks:
            recover.append((row, reasons))
        else:
            counts[row.id] = row.healthy_checks + 1
    drain, flag = _breaker(session, want_drain, policy, now)
    moves = (_move(session, states.DRAIN, drain, now)
             + _move(session, states.FLAG,
                     [(r, why) for r, why in flag
                      if r.service_state == states.SERVING], now)
             + _move(session, states.RECOVER, recover, now))
    held = {row.id: row.healthy_checks for row in rows}
    _count(session, {i: n for i, n in counts.items() if n != held[i]})
    if drain:
        session.execute(sa.insert(models.HealthDrain), [
            {'device_id': row.id, 'hostname': row.hostname,
             'drained_at': now} for row, _why in drain])
    return moves


def _breaker(session, wanted, policy, now):
    """Split the devices to drain into (drain, only flag)."""
    if not wanted:
        return [], []
    if not policy.auto_drain:
        return [], wanted
    per_host, fleet = drains_within(session, policy.breaker_window, now)
    drain, flag = [], []
    for row, reasons in wanted:
        if (fleet < policy.max_drains
                and per_host.get(row.hostname, 0)
                < policy.max_drains_per_host):
            fleet += 1
            per_host[row.hostname] = per_host.get(row.hostname, 0) + 1
            drain.append((row, reasons))
        else:
            flag.append((row, reasons))
    return drain, flag


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


def breaker_status(policy, session=None):
    """Whether the drain circuit breaker is open, fleet-wide and per host
    (for metrics, alerts and operators); reads only."""
    cutoff = hosts.utcnow() - datetime.timedelta(
        seconds=policy.breaker_window)
    if session is None:
        with api.reader() as session:
            per_host, fleet = _counts(session, cutoff)
    else:
        per_host, fleet = _counts(session, cutoff)
    return {
        'window': policy.breaker_window,
        'drains': fleet,
        'max_drains': policy.max_drains,
        'open': fleet >= policy.max_drains,
        'hosts': {host: {'drains': count,
                         'open': count >= policy.max_drains_per_host}
                  for host, count in sorted(per_host.items())},
        'max_drains_per_host': policy.max_drains_per_host,
    }
