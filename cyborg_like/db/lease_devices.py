"""The devices of leases: which devices each lease holds, which windows
of active leases take a device, and marking their hosts for Placement
(docs/leases.md). Shared by the lease modules of db/ (leases.py,
lease_plans.py, lease_boundaries.py), so that they import it and not
each other.
"""

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import host_changes
from cyborg_like.db import lease_windows
from cyborg_like.db import models

LEASE, WINDOW, LDEV = models.Lease, models.LeaseWindow, models.LeaseDevice
DEV = models.Device


def devices_of(session, lease_ids):
    """{lease id: [Device]} in one query."""
    if not lease_ids:
        return {}
    found = {}
    for lease_id, device in session.execute(
            sa.select(LDEV.lease_id, DEV).join(DEV, DEV.id == LDEV.device_id)
            .where(LDEV.lease_id.in_(lease_ids)).order_by(DEV.id)):
        found.setdefault(lease_id, []).append(device)
    return found


def taken(session, device_ids, after, before):
    """{device id: [(lease uuid, start, end)]}: windows of active leases
    of these devices that may meet (after, before), in order."""
    if not device_ids:
        return {}
    rows = session.execute(
        sa.select(LDEV.device_id, LEASE.uuid, WINDOW.starts_at,
                  WINDOW.ends_at)
        .join(LEASE, LEASE.id == LDEV.lease_id)
        .join(WINDOW, WINDOW.lease_id == LEASE.id)
        .where(LDEV.device_id.in_(device_ids),
               LEASE.state == states.LEASE_ACTIVE,
               WINDOW.state.in_(lease_windows.LIVE_WINDOWS),
               WINDOW.starts_at < before, WINDOW.ends_at > after)
        .order_by(WINDOW.starts_at)).all()
    found = {}
    for row in rows:
        found.setdefault(row.device_id, []).append(
            (row.uuid, row.starts_at, row.ends_at))
    return found


def mark(session, lease_ids):
    """What Placement shows of these leases' hosts changed."""
    devices = devices_of(session, sorted(set(lease_ids)))
    host_changes.mark_dirty(session, [
        d.hostname for found in devices.values() for d in found])
