"""The horizon of leases moving on: the windows of recurring leases
written ahead (docs/leases.md). Which windows a lease has, and which of
them clash with another lease's, the conductor's rules say
(conductor/lease_rules.py ``LeaseRules``, passed in as ``rules``).
"""

import datetime

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import host_changes
from cyborg_like.db import lease_devices
from cyborg_like.db import models

LEASE, WINDOW, LDEV = models.Lease, models.LeaseWindow, models.LeaseDevice

# How much further than the horizon the periodic writes windows, so that
# each recurring lease is extended (its row written) once a day, not at
# every run.
PLAN_STEP = datetime.timedelta(days=1)


@api.retry_on_deadlock
def plan(now, horizon_days, rules):
    """Periodic: write the windows of recurring leases up to a day past
    the horizon, once they are written less far than the horizon. A
    window overlapping another lease's already written one of a device
    (older leases are written first) is skipped."""
    due = now + datetime.timedelta(days=horizon_days)
    with api.writer() as session:
        leases = session.scalars(
            sa.select(LEASE).where(LEASE.state == states.LEASE_ACTIVE,
                                   LEASE.recurrence.is_not(None),
                                   LEASE.planned_until < due)
            .order_by(LEASE.id).with_for_update()).all()
        return _extend(session, leases, due + PLAN_STEP, rules)


def plan_leases_of(session, device_ids, horizon, rules):
    """Write the windows of the active leases of these devices up to
    ``horizon``, so that a new lease is checked against all of them."""
    if not device_ids:
        return
    leases = session.scalars(
        sa.select(LEASE).join(LDEV, LDEV.lease_id == LEASE.id)
        .where(LDEV.device_id.in_(device_ids),
               LEASE.state == states.LEASE_ACTIVE,
               LEASE.recurrence.is_not(None),
               LEASE.planned_until < horizon)
        .order_by(LEASE.id).distinct()).all()
    _extend(session, leases, horizon, rules)


def _extend(session, leases, horizon, rules):
    devices = lease_devices.devices_of(session, [lease.id for lease in leases])
    added = 0
    for lease in leases:
        windows = rules.planned(lease, horizon)
        ids = [d.id for d in devices.get(lease.id, [])]
        if windows and ids:
            windows = rules.unclashed(windows, _busy(session, lease, ids,
                                                     windows, rules.grace))
            if windows:
                session.execute(sa.insert(WINDOW), [
                    {'lease_id': lease.id, 'starts_at': s, 'ends_at': e,
                     'state': states.WINDOW_SCHEDULED} for s, e in windows])
                added += len(windows)
                host_changes.changed(session, [
                    d.hostname for d in devices[lease.id]])
        lease.planned_until = horizon
    return added


def _busy(session, lease, device_ids, windows, grace):
    """Other leases' windows of these devices that may meet ``windows``
    (``grace`` included), by start."""
    taken = lease_devices.taken(session, device_ids, windows[0][0] - grace,
                                windows[-1][1] + grace)
    busy = [t for device_id in device_ids for t in taken.get(device_id, [])
            if t[0] != lease.uuid]
    busy.sort(key=lambda t: t[1])
    return busy
