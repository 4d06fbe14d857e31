"""Per-project lease limits (``[leases] project_max_devices`` and
``project_max_device_hours``, docs/leases.md), checked race-free: the
queries and the lock here, the arithmetic in conductor/lease_rules.py.

A project's usage is what its active leases hold: their devices added up,
and the device-hours of their windows between now and the lease horizon.
Usage changes as time passes, so it is counted, not kept: the creating
transaction first locks the project's row of ``lease_projects``, and
creations of one project's leases take turns on it, each counting what
the one before committed. Two conductors can never both pass the limit.
The row is added, once, by a transaction of its own (``ensure``).
"""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import models

LEASE, WINDOW, LDEV = models.Lease, models.LeaseWindow, models.LeaseDevice
PROJECT = models.LeaseProject


def ensure(project_id, limits):
    """Add the project's row if missing (``limits``: those enforced,
    conductor/lease_rules.py), in a transaction of its own before the
    creating one: lock() then always finds a row to lock, and
    no locking read of a missing row takes a gap lock (MariaDB), whose
    creators would deadlock on their inserts."""
    if not limits:
        return
    with api.writer() as session:
        if session.scalar(sa.select(PROJECT.id).where(
                PROJECT.project_id == project_id)) is not None:
            return
        try:
            with session.begin_nested():
                session.add(PROJECT(project_id=project_id))
        except db_exc.DBDuplicateEntry:
            pass        # Another creator added it.


def lock(session, project_id, limits):
    """The creating transaction's first statement: lock the project's
    row (ensure() added it). A locking read, so that MariaDB's snapshot
    (taken at the first plain read) comes after it."""
    if limits:
        session.scalar(sa.select(PROJECT.id).where(
            PROJECT.project_id == project_id).with_for_update())


def usage(session, project_id, now, horizon):
    """(devices, [(devices, start, end)] of the windows between ``now``
    and ``horizon``) the project's active leases hold, None for the
    windows when it has none: two queries whatever their number. The
    conductor adds the hours up (conductor/lease_rules.py)."""
    counts = dict(session.execute(
        sa.select(LDEV.lease_id, sa.func.count())
        .join(LEASE, LEASE.id == LDEV.lease_id)
        .where(LEASE.project_id == project_id,
               LEASE.state == states.LEASE_ACTIVE)
        .group_by(LDEV.lease_id)).all())
    if not counts:
        return 0, None
    live = [s for s in states.LEASE_WINDOW.states
            if s not in states.LEASE_WINDOW.terminal]
    rows = session.execute(
        sa.select(WINDOW.lease_id, WINDOW.starts_at, WINDOW.ends_at)
        .where(WINDOW.lease_id.in_(list(counts)),
               WINDOW.state.in_(live), WINDOW.ends_at > now,
               WINDOW.starts_at < horizon)).all()
    return sum(counts.values()), [
        (counts[r.lease_id], r.starts_at, r.ends_at) for r in rows]
