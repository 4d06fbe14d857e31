"""The boundaries of lease windows, as the lease periodic finds them
passed (docs/leases.md): windows opened, noticed and closed, each by a
conditional update from the states the event allows
(``states.LEASE_WINDOW``), so that the periodic may run on every
conductor, be interrupted anywhere and start again from what the
database says.
"""

import datetime

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import lease_devices
from cyborg_like.db import lease_releases
from cyborg_like.db import models

LEASE, WINDOW = models.Lease, models.LeaseWindow
DEP, ARQ, HANDLE = models.Deployable, models.ExtARQ, models.AttachHandle


@api.retry_on_deadlock
def open_due(now):
    """Windows begun: open them (their devices reserved in Placement).
    Returns [(lease uuid, project, starts_at, ends_at)] opened."""
    with api.writer() as session:
        rows = _due(session, states.OPEN, WINDOW.starts_at <= now,
                    WINDOW.ends_at > now)
        opened = _apply(session, rows, states.OPEN)
        lease_devices.mark(session, [r.lease_id for r in opened])
        return [(r.uuid, r.project_id, r.starts_at, r.ends_at)
                for r in opened]


@api.retry_on_deadlock
def notice_due(now, notice):
    """Windows ending within ``notice`` seconds: record the end on the
    lessee's ARQs bound to the devices. Returns [{'lease', 'project_id',
    'ends_at', 'arqs': [(uuid, instance uuid)]}] to announce."""
    with api.writer() as session:
        rows = _due(session, states.NOTIFY,
                    WINDOW.ends_at <= now + datetime.timedelta(
                        seconds=notice),
                    WINDOW.ends_at > now)
        noticed = _apply(session, rows, states.NOTIFY)
        devices = lease_devices.devices_of(
            session, [r.lease_id for r in noticed])
        held = _held_by(session, {
            (row.project_id, d.id) for row in noticed
            for d in devices.get(row.lease_id, [])})
        return [_notice(session, row, devices.get(row.lease_id, []), held)
                for row in noticed]


def _notice(session, row, devices, held):
    """Record the window's end on the lessee's ARQs of ``held`` holding
    one of ``devices``; the notice to announce."""
    ids = {d.id for d in devices}
    arqs_held = [h for h in held if h.project_id == row.project_id
                 and h.device_id in ids]
    if arqs_held:
        session.execute(
            sa.update(ARQ)
            .where(ARQ.id.in_([h.id for h in arqs_held]))
            .values(lease_ends_at=row.ends_at)
            .execution_options(synchronize_session=False))
    return {'lease': row.uuid, 'project_id': row.project_id,
            'ends_at': row.ends_at, 'devices': [d.uuid for d in devices],
            'arqs': [(h.uuid, h.instance_uuid) for h in arqs_held]}


def _held_by(session, pairs):
    """The ARQs of each (project, device id) of ``pairs`` holding a
    handle of the device: one query for all."""
    if not pairs:
        return []
    rows = session.execute(
        sa.select(ARQ.id, ARQ.uuid, ARQ.instance_uuid, ARQ.project_id,
                  DEP.device_id)
        .join(HANDLE, HANDLE.id == ARQ.attach_handle_id)
        .join(DEP, DEP.id == HANDLE.deployable_id)
        .where(DEP.device_id.in_({d for _, d in pairs}),
               ARQ.project_id.in_({p for p, _ in pairs}),
               ARQ.state.in_(states.HOLDING))
        .order_by(ARQ.id)).all()
    return [r for r in rows if (r.project_id, r.device_id) in pairs]


@api.retry_on_deadlock
def close_due(now, rules):
    """Windows ended ``rules.grace`` ago: close them, unbinding the
    lessee's ARQs still bound to the devices (their devices go back to
    the owner; those Nova bound are marked for Nova to release). Returns
    (release jobs, [(arq uuid, instance uuid, scheduled)] unbound,
    [(arq uuid, instance uuid)] to ask Nova about, [(lease uuid, project,
    starts_at, ends_at)] of the windows closed)."""
    with api.writer() as session:
        rows = _due(session, states.CLOSE,
                    WINDOW.ends_at <= now - rules.grace)
        closed = _apply(session, rows, states.CLOSE)
        for row in closed:
            lease_releases.withdraw_notices(session, row.lease_id,
                                            [row.starts_at])
        devices = lease_devices.devices_of(
            session, [r.lease_id for r in closed])
        by_project = {}
        for row in closed:
            if row.starts_at <= now:
                by_project.setdefault(row.project_id, set()).update(
                    d.id for d in devices.get(row.lease_id, []))
        released, unbound, asked = lease_releases.unbind_lessee(
            session, {p: sorted(ids) for p, ids in by_project.items()},
            'The lease window lending its device ended.', now, rules)
        lease_devices.mark(session, [r.lease_id for r in closed])
        return released, unbound, asked, [
            (r.uuid, r.project_id, r.starts_at, r.ends_at) for r in closed]


def _due(session, event, *conditions):
    return session.execute(
        sa.select(WINDOW.id, WINDOW.lease_id, WINDOW.starts_at,
                  WINDOW.ends_at, LEASE.uuid, LEASE.project_id)
        .join(LEASE, LEASE.id == WINDOW.lease_id)
        .where(LEASE.state == states.LEASE_ACTIVE,
               WINDOW.state.in_(states.LEASE_WINDOW.sources(event)),
               *conditions).order_by(WINDOW.id)).all()


def _apply(session, rows, event):
    """Move each window by ``event``; those this call moved (another
    conductor may have moved some first)."""
    moved = []
    for row in rows:
        if session.execute(
                sa.update(WINDOW).where(
                    WINDOW.id == row.id,
                    WINDOW.state.in_(states.LEASE_WINDOW.sources(event)))
                .values(state=states.LEASE_WINDOW.target(event))
                .execution_options(synchronize_session=False)
        ).rowcount == 1:
            moved.append(row)
    return moved
