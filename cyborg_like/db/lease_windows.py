"""Whether a lease holds a device: the predicates over lease windows that
binding, scheduling, Placement and the availability feed ask
(docs/leases.md).

A module of its own, importing only the models, so that those readers
need not import db/leases.py (which writes leases and unbinds ARQs, and
so imports db/arqs.py): every import in db/ points one way.
"""

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import models

LEASE, WINDOW, LDEV = models.Lease, models.LeaseWindow, models.LeaseDevice

# A window still to come or going on: it holds its devices.
LIVE_WINDOWS = tuple(s for s in states.LEASE_WINDOW.states
                     if s not in states.LEASE_WINDOW.terminal)


def leased_to_other(session, device_id, project_id, now):
    """The window (with the lease's uuid) in which ``device_id`` is lent
    to a project other than ``project_id`` at ``now``, or None."""
    others = [] if project_id is None else [LEASE.project_id != project_id]
    return session.execute(
        sa.select(LEASE.uuid, WINDOW.ends_at)
        .join(WINDOW, WINDOW.lease_id == LEASE.id)
        .join(LDEV, LDEV.lease_id == LEASE.id)
        .where(LDEV.device_id == device_id,
               LEASE.state == states.LEASE_ACTIVE,
               WINDOW.state.in_(LIVE_WINDOWS),
               WINDOW.starts_at <= now, WINDOW.ends_at > now, *others)
        .limit(1)).first()


def in_window(device_id_column, now, project_id=None, other=True):
    """An EXISTS clause for a query over devices: the device is in a
    window at ``now`` of a lease of another project than ``project_id``
    (``other``) or of that project (not ``other``)."""
    mine = LEASE.project_id == (project_id or '')
    return sa.exists(
        sa.select(WINDOW.id)
        .join(LEASE, LEASE.id == WINDOW.lease_id)
        .join(LDEV, LDEV.lease_id == LEASE.id)
        .where(LDEV.device_id == device_id_column,
               LEASE.state == states.LEASE_ACTIVE,
               WINDOW.state.in_(LIVE_WINDOWS),
               WINDOW.starts_at <= now, WINDOW.ends_at > now,
               ~mine if other else mine))


def held_devices(session, device_ids=None, at=None):
    """Ids of the devices a lease holds: in an open (or noticed) window,
    as the periodic left them; or, ``at`` a time, in a window then."""
    query = (sa.select(LDEV.device_id)
             .join(LEASE, LEASE.id == LDEV.lease_id)
             .join(WINDOW, WINDOW.lease_id == LEASE.id)
             .where(LEASE.state == states.LEASE_ACTIVE))
    if at is None:
        query = query.where(WINDOW.state.in_(states.HOLDING_WINDOWS))
    else:
        query = query.where(WINDOW.state.in_(LIVE_WINDOWS),
                            WINDOW.starts_at <= at, WINDOW.ends_at > at)
    if device_ids is not None:
        query = query.where(LDEV.device_id.in_(device_ids))
    return set(session.scalars(query.distinct()))
