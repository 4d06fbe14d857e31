"""Preemption: other projects' bindings on the devices of a lease's
window to come (docs/leases.md). Their ARQs are told
(``lease_starts_at``) ``[leases] notice_seconds`` before the window
starts, and taken back ``grace_seconds`` after it (lease_releases.py);
the ARQs' fields are the records of both, so any conductor resumes
where another stopped.
"""

import datetime

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import arqs
from cyborg_like.db import lease_releases
from cyborg_like.db import lease_windows
from cyborg_like.db import models

LEASE, WINDOW, LDEV = models.Lease, models.LeaseWindow, models.LeaseDevice
DEV, DEP = models.Device, models.Deployable
ARQ, HANDLE = models.ExtARQ, models.AttachHandle


def _others_holding(session, *conditions):
    """(ARQ, window start, window end, lease uuid, device uuid) of every
    ARQ of a project other than the lessee holding a handle of a device
    of a window of an active lease, for the windows ``conditions``
    select, earliest window first, locked: one query for all leases."""
    return session.execute(
        sa.select(ARQ, WINDOW.starts_at, WINDOW.ends_at,
                  LEASE.uuid.label('lease_uuid'),
                  DEV.uuid.label('device_uuid'))
        .join(HANDLE, HANDLE.id == ARQ.attach_handle_id)
        .join(DEP, DEP.id == HANDLE.deployable_id)
        .join(DEV, DEV.id == DEP.device_id)
        .join(LDEV, LDEV.device_id == DEP.device_id)
        .join(LEASE, LEASE.id == LDEV.lease_id)
        .join(WINDOW, WINDOW.lease_id == LEASE.id)
        .where(LEASE.state == states.LEASE_ACTIVE,
               WINDOW.state.in_(lease_windows.LIVE_WINDOWS),
               ARQ.state.in_(states.HOLDING),
               sa.or_(ARQ.project_id.is_(None),
                      ARQ.project_id != LEASE.project_id),
               *conditions)
        .order_by(WINDOW.starts_at, ARQ.id)
        .with_for_update(of=ARQ)).all()


@api.retry_on_deadlock
def warn_due(now, notice):
    """Windows starting within ``notice`` seconds (or begun, not ended):
    record their start on the ARQs of other projects holding their
    devices and not told yet. Returns [{'lease', 'project_id' (the
    holder's), 'starts_at', 'ends_at', 'devices', 'arqs': [(uuid,
    instance uuid, device uuid)]}] to announce, one per lease and
    holding project."""
    with api.writer() as session:
        rows = _others_holding(
            session,
            WINDOW.starts_at <= now + datetime.timedelta(seconds=notice),
            WINDOW.ends_at > now,
            sa.or_(ARQ.lease_starts_at.is_(None),
                   ARQ.lease_starts_at != WINDOW.starts_at))
        notices = _notices(rows)
        by_start = {}
        for notice in notices:
            by_start.setdefault(notice['starts_at'], []).extend(
                notice.pop('ids'))
        for starts_at, ids in by_start.items():
            session.execute(
                sa.update(ARQ).where(ARQ.id.in_(ids))
                .values(lease_starts_at=starts_at)
                .execution_options(synchronize_session=False))
        return notices


def _notices(rows):
    """One notice per lease window and holding project, each ARQ in the
    notice of its earliest window."""
    seen, notices = set(), {}
    for row in rows:
        arq = row.ExtARQ
        if arq.id in seen:
            continue    # Its earliest window is told first.
        seen.add(arq.id)
        notice = notices.setdefault(
            (row.lease_uuid, row.starts_at, arq.project_id),
            {'lease': row.lease_uuid, 'project_id': arq.project_id,
             'starts_at': row.starts_at, 'ends_at': row.ends_at,
             'devices': [], 'arqs': [], 'ids': []})
        if row.device_uuid not in notice['devices']:
            notice['devices'].append(row.device_uuid)
        notice['arqs'].append((arq.uuid, arq.instance_uuid,
                               row.device_uuid))
        notice['ids'].append(arq.id)
    return list(notices.values())


@api.retry_on_deadlock
def preempt_due(now, rules):
    """Windows begun ``rules.grace`` ago and not ended: take back the
    devices of ARQs of other projects told of them (``warn_due``) still
    holding them, bound before the window. Bound by standalone
    scheduling: unbound. Bound through Nova: Nova is to be asked to
    release them (``release_asked_at``; never unbound behind its back);
    ``rules.by_binder`` tells which. Returns (release jobs, [(arq uuid,
    instance uuid, scheduled, lease uuid)] unbound, [(arq uuid, instance
    uuid, lease uuid)] newly to ask Nova about)."""
    with api.writer() as session:
        rows = _others_holding(
            session, WINDOW.starts_at <= now - rules.grace,
            WINDOW.ends_at > now, ARQ.lease_starts_at == WINDOW.starts_at)
        held, leases_of = [], {}
        for row in rows:
            if row.ExtARQ.id not in leases_of:
                leases_of[row.ExtARQ.id] = row.lease_uuid
                held.append(row.ExtARQ)
        ours, nova_bound = rules.by_binder(held)
        unbound = [(arq.uuid, arq.instance_uuid, arq.scheduled,
                    leases_of[arq.id]) for arq in ours]
        released = arqs.unbind_rows(
            session, ours, 'A lease window lending its device to another '
            'project began.')
        asked = [(arq.uuid, arq.instance_uuid, leases_of[arq.id])
                 for arq in lease_releases.ask_release(session, nova_bound,
                                                       now)]
        return released, unbound, asked
