"""Device leases: devices lent to a project (the lessee) for one window or
recurring ones (docs/leases.md).

A lease holds named devices, or ``count`` devices of a resource class
with traits, chosen at creation. Its windows (common/recurrence.py) are
written to ``lease_windows`` in UTC up to ``[leases] horizon_days`` ahead
(``planned_until``), and further as time passes (``plan``). Creation
locks the candidate devices' rows, so two conductors creating leases of
the same devices take turns, and refuses (409) windows overlapping
another active lease's windows of a device, grace included: no device is
ever lent twice at once. It also refuses devices another project's
workload holds, unless the caller may preempt (``cyborg:lease:preempt``),
and keeps each project within its lease limits (lease_limits.py).

Binding reads the windows' times (``leased_to_other``, in
lease_windows.py with the other predicates over windows): inside a window
only the lessee's ARQs bind to the devices, whatever the periodic has
done yet. Placement and the availability feed read the windows' states,
which the conductors' lease periodic moves at the boundaries
(``open_due``, ``notice_due``, ``close_due``), each a conditional update
from the states the event allows, so that periodic may run on every
conductor, be interrupted anywhere and start again from what the
database says.

Other projects' bindings made before a window are preempted
(``warn_due``, ``preempt_due``): their ARQs get ``lease_starts_at``
``[leases] notice_seconds`` before the window starts and are unbound
``grace_seconds`` after it; those Nova bound to an instance are never
unbound here but marked (``release_asked_at``) for the conductor to ask
Nova to release them. The ARQs' fields are the records of the notice
and of the ask, so these too resume from the database.
"""

import datetime
import json

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import recurrence
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import arqs
from cyborg_like.db import host_changes
from cyborg_like.db import lease_limits
from cyborg_like.db import lease_windows
from cyborg_like.db import models

LEASE, WINDOW, LDEV = models.Lease, models.LeaseWindow, models.LeaseDevice
DEV, DEP, ATTR = models.Device, models.Deployable, models.Attribute
ARQ, HANDLE = models.ExtARQ, models.AttachHandle

LIVE_WINDOWS = lease_windows.LIVE_WINDOWS


def _seconds(value):
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(seconds=value)


# Creation.

@api.retry_on_deadlock
def create(values, project_id, now, horizon_days, max_windows, grace,
           preempt=False, limits=None):
    """A new lease for ``project_id`` from the API's ``values`` (start and
    end as naive local times of ``timezone``); 409 when its windows
    cannot be guaranteed, or when a device is held by another project's
    workload (bound requests) and ``preempt`` is False; 403 beyond
    ``limits`` ({'devices': n, 'device_hours': n}, lease_limits.py)."""
    start, end = values['start'], values['end']
    rule, zone = values.get('recurrence'), values['timezone']
    recurrence.check(start, end, zone, rule)
    horizon = now + datetime.timedelta(days=horizon_days)
    windows = recurrence.windows(start, end, zone, rule, now, horizon,
                                 limit=max_windows)
    if not windows:
        raise exception.Invalid(
            'The lease has no window between now and the lease horizon '
            '(%d days ahead, [leases] horizon_days).' % horizon_days)
    of_class = None if values.get('devices') else _of_class(
        values['resource_class'])
    lease_limits.ensure(project_id, limits)
    with api.writer() as session:
        # The project's lock first (before any plain read: see
        # _candidates), then the devices', in that order for everyone.
        lease_limits.lock(session, project_id, limits)
        candidates = _candidates(session, values, of_class)
        holders = {} if preempt else _workloads_of_others(
            session, [d.id for d in candidates], project_id)
        devices = _choose(session, candidates, windows, values, horizon,
                          max_windows, _seconds(grace), holders)
        lease_limits.check(session, project_id, limits, len(devices),
                           windows, now, horizon)
        lease = LEASE(
            uuid=uuidutils.generate_uuid(), name=values.get('name'),
            project_id=project_id, state=states.LEASE_ACTIVE,
            resource_class=values.get('resource_class'),
            traits=json.dumps(values.get('traits', {}))
            if values.get('resource_class') else None,
            start_local=start, end_local=end, timezone=zone,
            recurrence=rule, planned_until=horizon)
        session.add(lease)
        session.flush()
        session.execute(sa.insert(LDEV), [
            {'lease_id': lease.id, 'device_id': d.id} for d in devices])
        session.execute(sa.insert(WINDOW), [
            {'lease_id': lease.id, 'starts_at': s, 'ends_at': e,
             'state': states.WINDOW_SCHEDULED} for s, e in windows])
        # What these hosts offer ahead changed (the feed's ?at=).
        host_changes.changed(session, [d.hostname for d in devices])
        return _views(session, [lease], now)[0]


def _candidates(session, values, of_class=None):
    """The devices the lease may hold, locked (in id order, so creators
    of leases of the same devices take turns without deadlocking).

    The lock is the transaction's first read: MariaDB's repeatable read
    takes its snapshot at the first plain read (a subquery of a locking
    read included), which must come after the lock, so that a lease
    committed by the creator that held it is seen. So a profile's devices
    (``of_class``, from ``_of_class``) were found before, in a
    transaction of their own, and are checked again once locked.
    """
    if values.get('devices'):
        wanted = sorted(set(values['devices']))
        found = session.scalars(
            sa.select(DEV).where(DEV.uuid.in_(wanted)).order_by(DEV.id)
            .with_for_update()).all()
        missing = set(wanted) - {d.uuid for d in found}
        if missing:
            raise exception.DeviceNotFound(uuid=sorted(missing)[0])
        return found
    if not of_class:
        return []
    devices = session.scalars(
        sa.select(DEV).where(DEV.id.in_(of_class)).order_by(DEV.id)
        .with_for_update()).all()
    if not devices:
        return []
    group = {'resources:%s' % values['resource_class']: '1'}
    group.update(('trait:%s' % name, need)
                 for name, need in values.get('traits', {}).items())
    deployables = session.execute(
        sa.select(DEP.id, DEP.uuid, DEP.device_id)
        .where(DEP.device_id.in_([d.id for d in devices]),
               DEP.num_accelerators > 0)).all()
    attributes = {}
    for attribute in session.scalars(sa.select(ATTR).where(
            ATTR.deployable_id.in_([d.id for d in deployables]))):
        attributes.setdefault(attribute.deployable_id, []).append(attribute)
    matching = {d.device_id for d in deployables
                if arqs.unmet_by(d.uuid, attributes.get(d.id, []),
                                 group) is None}
    return [d for d in devices if d.id in matching]


def _of_class(resource_class):
    """Ids of the devices with a deployable of ``resource_class``."""
    with api.reader() as session:
        return sorted(set(session.scalars(
            sa.select(DEP.device_id)
            .join(ATTR, sa.and_(ATTR.deployable_id == DEP.id,
                                ATTR.key == 'rc'))
            .where(ATTR.value == resource_class,
                   DEP.num_accelerators > 0))))


def _choose(session, candidates, windows, values, horizon, max_windows,
            grace, holders):
    """The devices the new lease gets: every named one, or the first
    ``count`` free for all its windows: held by no other lease then, nor
    by another project's workload of ``holders`` ({device id: ARQ row}).
    """
    ids = [d.id for d in candidates]
    _plan_leases_of(session, ids, horizon, max_windows, grace)
    taken = _taken(session, ids, windows[0][0] - grace,
                   windows[-1][1] + grace)
    conflicts = {}
    for device in candidates:
        clash = _clash(taken.get(device.id, []), windows, grace)
        if clash is not None or device.id in holders:
            conflicts[device.id] = (device, clash, holders.get(device.id))
    free = [d for d in candidates if d.id not in conflicts]
    wanted = len(candidates) if values.get('devices') else values['count']
    if len(free) >= wanted:
        return free[:wanted]
    if conflicts:
        raise _conflict(next(iter(conflicts.values())), len(free), wanted,
                        windows[0][0])
    raise exception.LeaseNoDevices(
        found=len(candidates), count=wanted,
        what='resource class %s%s' % (
            values['resource_class'], ''.join(
                ', %s %s' % (k, v) for k, v in sorted(
                    values.get('traits', {}).items()))))


def _conflict(conflict, free, wanted, first):
    """The lessor's 409, naming what holds a device; it also carries the
    counts a project is answered instead (LeaseNotFree)."""
    device, clash, holder = conflict
    counts = {'free': free, 'wanted': wanted, 'first': api.isotime(first)}
    if clash is None:
        return exception.LeaseDeviceHeld(
            arq=holder.uuid, project=holder.project_id,
            instance=holder.instance_uuid, device=device.uuid, **counts)
    uuid, starts_at, ends_at = clash
    return exception.LeaseConflict(
        lease=uuid, device=device.uuid, starts_at=api.isotime(starts_at),
        ends_at=api.isotime(ends_at), **counts)


def _workloads_of_others(session, device_ids, project_id):
    """{device id: an ARQ of a project other than ``project_id`` holding
    it}: bound (a handle of the device) or being bound to one of its
    deployables (BindStarted by Nova, no handle yet). One query."""
    if not device_ids:
        return {}
    rows = session.execute(
        sa.select(DEP.device_id, ARQ.uuid, ARQ.project_id,
                  ARQ.instance_uuid)
        .select_from(ARQ)
        .outerjoin(HANDLE, HANDLE.id == ARQ.attach_handle_id)
        .join(DEP, sa.or_(DEP.id == HANDLE.deployable_id,
                          sa.and_(ARQ.attach_handle_id.is_(None),
                                  DEP.rp_uuid == ARQ.device_rp_uuid)))
        .where(DEP.device_id.in_(device_ids),
               ARQ.state.in_(states.HOLDING),
               sa.or_(ARQ.project_id.is_(None),
                      ARQ.project_id != project_id))
        .order_by(ARQ.id)).all()
    held = {}
    for row in rows:
        held.setdefault(row.device_id, row)
    return held


def _taken(session, device_ids, after, before):
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
               WINDOW.state.in_(LIVE_WINDOWS),
               WINDOW.starts_at < before, WINDOW.ends_at > after)
        .order_by(WINDOW.starts_at)).all()
    taken = {}
    for row in rows:
        taken.setdefault(row.device_id, []).append(
            (row.uuid, row.starts_at, row.ends_at))
    return taken


def _clash(taken, windows, grace):
    """The first of ``taken`` within ``grace`` of one of ``windows`` (both
    sorted by start), or None: a merge, not a product."""
    i = 0
    for uuid, starts_at, ends_at in taken:
        while i < len(windows) and windows[i][1] + grace <= starts_at:
            i += 1
        if i == len(windows):
            return None
        if windows[i][0] < ends_at + grace:
            return uuid, starts_at, ends_at + grace
    return None


# The horizon moving on.

def _plan_leases_of(session, device_ids, horizon, max_windows, grace):
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
    _extend(session, leases, horizon, max_windows, grace)


# How much further than the horizon the periodic writes windows, so that
# each recurring lease is extended (its row written) once a day, not at
# every run.
PLAN_STEP = datetime.timedelta(days=1)


@api.retry_on_deadlock
def plan(now, horizon_days, max_windows, grace):
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
        return _extend(session, leases, due + PLAN_STEP, max_windows, grace)


def _extend(session, leases, horizon, max_windows, grace):
    grace = _seconds(grace)
    devices = _devices_of(session, [lease.id for lease in leases])
    added = 0
    for lease in leases:
        try:
            windows = recurrence.windows(
                lease.start_local, lease.end_local, lease.timezone,
                lease.recurrence, lease.planned_until, horizon,
                limit=max_windows)
        except exception.Invalid:
            windows = []
        windows = [w for w in windows if w[0] >= lease.planned_until]
        ids = [d.id for d in devices.get(lease.id, [])]
        if windows and ids:
            taken = _taken(session, ids, windows[0][0] - grace,
                           windows[-1][1] + grace)
            busy = [t for device_id in ids for t in taken.get(device_id, [])
                    if t[0] != lease.uuid]
            busy.sort(key=lambda t: t[1])
            windows = [w for w in windows
                       if _clash(busy, [w], grace) is None]
            if windows:
                session.execute(sa.insert(WINDOW), [
                    {'lease_id': lease.id, 'starts_at': s, 'ends_at': e,
                     'state': states.WINDOW_SCHEDULED} for s, e in windows])
                added += len(windows)
                host_changes.changed(session, [
                    d.hostname for d in devices[lease.id]])
        lease.planned_until = horizon
    return added


@api.retry_on_deadlock
def expire(now):
    """Periodic: active leases with no window left to come (their
    recurrence ended, or their one window closed) expire."""
    with api.writer() as session:
        live = sa.select(WINDOW.id).where(WINDOW.lease_id == LEASE.id,
                                          WINDOW.state.in_(LIVE_WINDOWS))
        candidates = session.scalars(sa.select(LEASE).where(
            LEASE.state == states.LEASE_ACTIVE, ~sa.exists(live))).all()
        ended = []
        for lease in candidates:
            last = recurrence.last_start(lease.start_local, lease.timezone,
                                         lease.recurrence)
            if last is not None and last < lease.planned_until and \
                    _move(session, lease.id, states.EXPIRE, ended_at=now):
                ended.append(lease.uuid)
        return ended


def _move(session, lease_id, event, **values):
    return session.execute(
        sa.update(LEASE).where(LEASE.id == lease_id,
                               LEASE.state.in_(states.LEASE.sources(event)))
        .values(state=states.LEASE.target(event), **values)
        .execution_options(synchronize_session=False)).rowcount == 1


# Reading.

def list_leases(filters, limit, marker, sort_key, sort_dir, now,
                project_id=None):
    """A page of leases (of ``project_id`` unless None: the lessor sees
    every lease); three queries whatever the page size."""
    query = _scoped(sa.select(LEASE), project_id)
    if filters.get('state'):
        query = query.where(LEASE.state == filters['state'])
    if filters.get('project_id') and project_id is None:
        query = query.where(LEASE.project_id == filters['project_id'])
    with api.reader() as session:
        query = api.paginate(session, query, LEASE, limit, marker, sort_key,
                             sort_dir)
        return _views(session, session.scalars(query).all(), now)


def get(uuid, now, project_id=None):
    with api.reader() as session:
        return _views(session, [_get(session, uuid, project_id)], now)[0]


def _get(session, uuid, project_id, for_update=False):
    query = _scoped(sa.select(LEASE).where(LEASE.uuid == uuid), project_id)
    if for_update:
        query = query.with_for_update()
    lease = session.scalars(query).first()
    if lease is None:
        raise exception.LeaseNotFound(uuid=uuid)
    return lease


def _scoped(query, project_id):
    if project_id is None:
        return query
    return query.where(LEASE.project_id == project_id)


def _devices_of(session, lease_ids):
    """{lease id: [Device]} in one query."""
    if not lease_ids:
        return {}
    found = {}
    for lease_id, device in session.execute(
            sa.select(LDEV.lease_id, DEV).join(DEV, DEV.id == LDEV.device_id)
            .where(LDEV.lease_id.in_(lease_ids)).order_by(DEV.id)):
        found.setdefault(lease_id, []).append(device)
    return found


def _next_windows(session, lease_ids, now):
    """{lease id: its current or next window} in one query."""
    if not lease_ids:
        return {}
    first = (sa.select(WINDOW.lease_id,
                       sa.func.min(WINDOW.starts_at).label('starts_at'))
             .where(WINDOW.lease_id.in_(lease_ids),
                    WINDOW.state.in_(LIVE_WINDOWS))
             .group_by(WINDOW.lease_id).subquery())
    rows = session.execute(
        sa.select(WINDOW).join(first, sa.and_(
            first.c.lease_id == WINDOW.lease_id,
            first.c.starts_at == WINDOW.starts_at))).scalars()
    return {w.lease_id: w for w in rows}


def _views(session, leases, now):
    ids = [lease.id for lease in leases]
    devices = _devices_of(session, ids)
    windows = _next_windows(session, ids, now)
    return [_view(lease, devices.get(lease.id, []), windows.get(lease.id))
            for lease in leases]


def _view(lease, devices, window):
    return {
        'uuid': lease.uuid, 'name': lease.name,
        'project_id': lease.project_id, 'state': lease.state,
        'resource_class': lease.resource_class,
        'traits': json.loads(lease.traits) if lease.traits else None,
        'count': len(devices),
        'devices': [{'uuid': d.uuid, 'hostname': d.hostname}
                    for d in devices],
        'start': lease.start_local.isoformat(),
        'end': lease.end_local.isoformat(),
        'timezone': lease.timezone, 'recurrence': lease.recurrence,
        'window': None if window is None else {
            'starts_at': api.isotime(window.starts_at),
            'ends_at': api.isotime(window.ends_at), 'state': window.state},
        'planned_until': api.isotime(lease.planned_until),
        'ended_at': api.isotime(lease.ended_at),
        'created_at': api.isotime(lease.created_at),
        'updated_at': api.isotime(lease.updated_at),
    }


# Ending a lease early.

@api.retry_on_deadlock
def end(uuid, event, now, project_id=None):
    """``give_back`` (the lessee) or ``revoke`` (the lessor): the lease
    ends now, its windows are cancelled, and the lessee's ARQs bound to
    its devices in a window begun are unbound (those Nova bound: marked
    for Nova to release). Returns (the lease, release jobs, [(arq uuid,
    instance uuid, scheduled)] unbound, [(arq uuid, instance uuid)] to ask
    Nova about)."""
    reason = {states.GIVE_BACK: 'The lease lending its device was given '
                                'back.',
              states.REVOKE: 'The lease lending its device was revoked by '
                             'the lessor.'}[event]
    with api.writer() as session:
        lease = _get(session, uuid, project_id, for_update=True)
        if not _move(session, lease.id, event, ended_at=now):
            raise exception.LeaseBadState(uuid=uuid, state=lease.state)
        begun = session.scalars(sa.select(WINDOW).where(
            WINDOW.lease_id == lease.id, WINDOW.state.in_(LIVE_WINDOWS),
            WINDOW.starts_at <= now).with_for_update()).all()
        _withdraw_notices(session, lease.id)
        session.execute(
            sa.update(WINDOW).where(
                WINDOW.lease_id == lease.id,
                WINDOW.state.in_(states.LEASE_WINDOW.sources(states.CANCEL)))
            .values(state=states.LEASE_WINDOW.target(states.CANCEL))
            .execution_options(synchronize_session=False))
        devices = _devices_of(session, [lease.id]).get(lease.id, [])
        released, unbound, asked = [], [], []
        if begun:
            released, unbound, asked = _unbind_lessee(
                session, {lease.project_id: [d.id for d in devices]},
                reason, now)
        host_changes.mark_dirty(session, [d.hostname for d in devices])
        session.flush()
        session.refresh(lease)
        return _views(session, [lease], now)[0], released, unbound, asked


def _withdraw_notices(session, lease_id, starts=None):
    """The windows of this lease will not come (or, ``starts`` given,
    those starting then are over): the notices given to other projects'
    ARQs on its devices are withdrawn, and so is the ask to Nova to
    release those Nova bound (a guest is not shelved for a window that
    no longer needs its device)."""
    handles = (sa.select(HANDLE.id)
               .join(DEP, DEP.id == HANDLE.deployable_id)
               .join(LDEV, LDEV.device_id == DEP.device_id)
               .where(LDEV.lease_id == lease_id))
    if starts is None:
        starts = sa.select(WINDOW.starts_at).where(
            WINDOW.lease_id == lease_id, WINDOW.state.in_(LIVE_WINDOWS))
    session.execute(
        sa.update(ARQ).where(ARQ.attach_handle_id.in_(handles),
                             ARQ.lease_starts_at.in_(starts))
        .values(lease_starts_at=None, release_asked_at=None)
        .execution_options(synchronize_session=False))


def _unbind_lessee(session, by_project, reason, now):
    """Unbind the ARQs of each project holding a handle of its devices;
    those Nova bound are marked for Nova to release instead
    (``_by_binder``). Returns (release jobs, [(arq uuid, instance uuid,
    scheduled)] unbound, [(arq uuid, instance uuid)] newly to ask Nova
    about)."""
    pairs = [(p, d) for p, ids in by_project.items() for d in ids]
    if not pairs:
        return [], [], []
    rows = session.execute(
        sa.select(ARQ, DEP.device_id)
        .join(HANDLE, HANDLE.id == ARQ.attach_handle_id)
        .join(DEP, DEP.id == HANDLE.deployable_id)
        .where(DEP.device_id.in_({d for _, d in pairs}),
               ARQ.project_id.in_({p for p, _ in pairs}),
               ARQ.state.in_(states.HOLDING))
        .order_by(ARQ.id).with_for_update(of=ARQ)).all()
    wanted = set(pairs)
    ours, nova_bound = _by_binder([arq for arq, device_id in rows
                                   if (arq.project_id, device_id) in wanted])
    unbound = [(arq.uuid, arq.instance_uuid, arq.scheduled) for arq in ours]
    asked = [(arq.uuid, arq.instance_uuid)
             for arq in _ask_release(session, nova_bound, now)]
    return arqs.unbind_rows(session, ours, reason), unbound, asked


# The boundaries of windows, as the lease periodic finds them passed.

@api.retry_on_deadlock
def open_due(now):
    """Windows begun: open them (their devices reserved in Placement).
    Returns [(lease uuid, project, starts_at, ends_at)] opened."""
    with api.writer() as session:
        rows = _due(session, states.OPEN, WINDOW.starts_at <= now,
                    WINDOW.ends_at > now)
        opened = _apply(session, rows, states.OPEN)
        _mark(session, [r.lease_id for r in opened])
        return [(r.uuid, r.project_id, r.starts_at, r.ends_at)
                for r in opened]


@api.retry_on_deadlock
def notice_due(now, notice):
    """Windows ending within ``notice`` seconds: record the end on the
    lessee's ARQs bound to the devices. Returns [{'lease', 'project_id',
    'ends_at', 'arqs': [(uuid, instance uuid)]}] to announce."""
    with api.writer() as session:
        rows = _due(session, states.NOTIFY,
                    WINDOW.ends_at <= now + _seconds(notice),
                    WINDOW.ends_at > now)
        noticed = _apply(session, rows, states.NOTIFY)
        devices = _devices_of(session, [r.lease_id for r in noticed])
        held = _held_by(session, {
            (row.project_id, d.id) for row in noticed
            for d in devices.get(row.lease_id, [])})
        notices = []
        for row in noticed:
            ids = {d.id for d in devices.get(row.lease_id, [])}
            arqs_held = [h for h in held if h.project_id == row.project_id
                         and h.device_id in ids]
            if arqs_held:
                session.execute(
                    sa.update(ARQ)
                    .where(ARQ.id.in_([h.id for h in arqs_held]))
                    .values(lease_ends_at=row.ends_at)
                    .execution_options(synchronize_session=False))
            notices.append({
                'lease': row.uuid, 'project_id': row.project_id,
                'ends_at': row.ends_at,
                'devices': [d.uuid for d in devices.get(row.lease_id, [])],
                'arqs': [(h.uuid, h.instance_uuid) for h in arqs_held]})
        return notices


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
def close_due(now, grace):
    """Windows ended ``grace`` seconds ago: close them, unbinding the
    lessee's ARQs still bound to the devices (their devices go back to
    the owner; those Nova bound are marked for Nova to release). Returns
    (release jobs, [(arq uuid, instance uuid, scheduled)] unbound,
    [(arq uuid, instance uuid)] to ask Nova about, lease uuids closed)."""
    with api.writer() as session:
        rows = _due(session, states.CLOSE,
                    WINDOW.ends_at <= now - _seconds(grace))
        closed = _apply(session, rows, states.CLOSE)
        for row in closed:
            _withdraw_notices(session, row.lease_id, [row.starts_at])
        devices = _devices_of(session, [r.lease_id for r in closed])
        by_project = {}
        for row in closed:
            if row.starts_at <= now:
                by_project.setdefault(row.project_id, set()).update(
                    d.id for d in devices.get(row.lease_id, []))
        released, unbound, asked = _unbind_lessee(
            session, {p: sorted(ids) for p, ids in by_project.items()},
            'The lease window lending its device ended.', now)
        _mark(session, [r.lease_id for r in closed])
        return released, unbound, asked, sorted({r.uuid for r in closed})


# Preemption: other projects' bindings on the devices of a window to come.

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
               WINDOW.state.in_(LIVE_WINDOWS),
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
            session, WINDOW.starts_at <= now + _seconds(notice),
            WINDOW.ends_at > now,
            sa.or_(ARQ.lease_starts_at.is_(None),
                   ARQ.lease_starts_at != WINDOW.starts_at))
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
        by_start = {}
        for notice in notices.values():
            by_start.setdefault(notice['starts_at'], []).extend(
                notice.pop('ids'))
        for starts_at, ids in by_start.items():
            session.execute(
                sa.update(ARQ).where(ARQ.id.in_(ids))
                .values(lease_starts_at=starts_at)
                .execution_options(synchronize_session=False))
        return list(notices.values())


@api.retry_on_deadlock
def preempt_due(now, grace):
    """Windows begun ``grace`` seconds ago and not ended: take back the
    devices of ARQs of other projects told of them (``warn_due``) still
    holding them, bound before the window. Bound by standalone
    scheduling: unbound. Bound through Nova: Nova is to be asked to
    release them (``release_asked_at``; never unbound behind its back).
    Returns (release jobs, [(arq uuid, instance uuid, scheduled, lease
    uuid)] unbound, [(arq uuid, instance uuid, lease uuid)] newly to ask
    Nova about)."""
    with api.writer() as session:
        rows = _others_holding(
            session, WINDOW.starts_at <= now - _seconds(grace),
            WINDOW.ends_at > now, ARQ.lease_starts_at == WINDOW.starts_at)
        held, leases_of = [], {}
        for row in rows:
            if row.ExtARQ.id not in leases_of:
                leases_of[row.ExtARQ.id] = row.lease_uuid
                held.append(row.ExtARQ)
        ours, nova_bound = _by_binder(held)
        unbound = [(arq.uuid, arq.instance_uuid, arq.scheduled,
                    leases_of[arq.id]) for arq in ours]
        released = arqs.unbind_rows(
            session, ours, 'A lease window lending its device to another '
            'project began.')
        asked = [(arq.uuid, arq.instance_uuid, leases_of[arq.id])
                 for arq in _ask_release(session, nova_bound, now)]
        return released, unbound, asked


def _by_binder(held):
    """(ARQs bound by standalone scheduling or to no instance, ARQs Nova
    bound to an instance): a device the latter hold is given back by
    Nova, never taken from the guest behind its back."""
    nova_bound = [arq for arq in held
                  if not arq.scheduled and arq.instance_uuid]
    return [arq for arq in held if arq not in nova_bound], nova_bound


def _ask_release(session, held, now):
    """Mark these Nova-bound ARQs as to be released by Nova; those this
    call marked (another conductor may have marked some first): each is
    announced once."""
    marked = []
    for arq in held:
        if session.execute(
                sa.update(ARQ).where(ARQ.id == arq.id,
                                     ARQ.release_asked_at.is_(None))
                .values(release_asked_at=now)
                .execution_options(synchronize_session=False)
        ).rowcount == 1:
            marked.append(arq)
    return marked


def awaiting_nova():
    """[(arq uuid, instance uuid)] of the Nova-bound ARQs whose device a
    lease needs back and that still hold it: the conductor asks Nova
    again, as ``[leases] preemption_action`` says, until Nova released
    them (an unbind or a delete by Nova clears the mark)."""
    with api.reader() as session:
        return [tuple(row) for row in session.execute(
            sa.select(ARQ.uuid, ARQ.instance_uuid)
            .where(ARQ.release_asked_at.is_not(None),
                   ARQ.state.in_(states.HOLDING),
                   ARQ.instance_uuid.is_not(None))
            .order_by(ARQ.id))]


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


def _mark(session, lease_ids):
    """What Placement shows of these leases' hosts changed."""
    devices = _devices_of(session, sorted(set(lease_ids)))
    host_changes.mark_dirty(session, [
        d.hostname for found in devices.values() for d in found])
