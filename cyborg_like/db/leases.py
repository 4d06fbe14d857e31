"""Device leases: devices lent to a project (the lessee) for one window or
recurring ones (docs/leases.md): creating, reading, ending and expiring
them.

A lease holds named devices, or ``count`` devices of a resource class
with traits, chosen at creation. Its windows (common/recurrence.py) are
written to ``lease_windows`` in UTC up to ``[leases] horizon_days`` ahead
(``planned_until``), and further as time passes (lease_plans.py).
Creation locks the candidate devices' rows, so two conductors creating
leases of the same devices take turns, and refuses (409) windows
overlapping another active lease's windows of a device, grace included:
no device is ever lent twice at once. It also refuses devices another
project's workload holds, unless the caller may preempt
(``cyborg:lease:preempt``), and keeps each project within its lease
limits (lease_limits.py). Which windows, which devices and which limits
the conductor's rules decide (conductor/lease_rules.py, passed in as
``rules``); this module runs the queries and conditional updates.

The other lease modules of db/, one per noun: lease_windows.py (whether a
lease holds a device: binding, scheduling, Placement and the feed ask),
lease_devices.py (a lease's devices, the windows taking a device),
lease_plans.py (the horizon moving on), lease_boundaries.py (windows
opened, noticed, closed by the periodic), lease_preemption.py (other
projects' bindings told and taken back), lease_releases.py (unbinding,
or asking Nova), lease_limits.py (per-project limits).
"""

import json

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import admission
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import host_changes
from cyborg_like.db import lease_devices
from cyborg_like.db import lease_limits
from cyborg_like.db import lease_plans
from cyborg_like.db import lease_releases
from cyborg_like.db import lease_windows
from cyborg_like.db import models

LEASE, WINDOW, LDEV = models.Lease, models.LeaseWindow, models.LeaseDevice
DEV, DEP, ATTR = models.Device, models.Deployable, models.Attribute
ARQ, HANDLE = models.ExtARQ, models.AttachHandle

LIVE_WINDOWS = lease_windows.LIVE_WINDOWS


# Creation.

@api.retry_on_deadlock
def create(values, project_id, now, windows, horizon, rules, preempt=False):
    """A new lease for ``project_id`` from the API's ``values`` (start and
    end as naive local times of ``timezone``) with ``windows`` (naive UTC,
    up to ``horizon``), as the conductor's ``rules`` computed them
    (conductor/lease_rules.py); 409 when its windows cannot be
    guaranteed, or when a device is held by another project's workload
    (bound requests) and ``preempt`` is False; 403 beyond
    ``rules.limits``."""
    of_class = None if values.get('devices') else _of_class(
        values['resource_class'])
    lease_limits.ensure(project_id, rules.limits)
    with api.writer() as session:
        # The project's lock first (before any plain read: see
        # _candidates), then the devices', in that order for everyone.
        lease_limits.lock(session, project_id, rules.limits)
        candidates = _candidates(session, values, of_class)
        holders = {} if preempt else _workloads_of_others(
            session, [d.id for d in candidates], project_id)
        devices = _choose(session, candidates, windows, values, horizon,
                          rules, holders)
        if rules.limits:
            rules.check_limits(
                lease_limits.usage(session, project_id, now, horizon),
                len(devices), windows, now, horizon)
        lease = LEASE(
            uuid=uuidutils.generate_uuid(), name=values.get('name'),
            project_id=project_id, state=states.LEASE_ACTIVE,
            resource_class=values.get('resource_class'),
            traits=json.dumps(values.get('traits', {}))
            if values.get('resource_class') else None,
            start_local=values['start'], end_local=values['end'],
            timezone=values['timezone'],
            recurrence=values.get('recurrence'), planned_until=horizon)
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
                if admission.unmet_by(d.uuid, attributes.get(d.id, []),
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


def _choose(session, candidates, windows, values, horizon, rules,
            holders):
    """The devices the new lease gets (``rules.choose``), once the
    leases of the candidates are written up to ``horizon`` and their
    windows around the new ones read."""
    ids = [d.id for d in candidates]
    lease_plans.plan_leases_of(session, ids, horizon, rules)
    taken = lease_devices.taken(session, ids, windows[0][0] - rules.grace,
                                windows[-1][1] + rules.grace)
    return rules.choose(candidates, taken, holders, windows, values)


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


@api.retry_on_deadlock
def expire(now, rules):
    """Periodic: active leases with no window left to come expire, when
    ``rules.expired`` says (their recurrence ended, or their one window
    closed)."""
    with api.writer() as session:
        live = sa.select(WINDOW.id).where(WINDOW.lease_id == LEASE.id,
                                          WINDOW.state.in_(LIVE_WINDOWS))
        candidates = session.scalars(sa.select(LEASE).where(
            LEASE.state == states.LEASE_ACTIVE, ~sa.exists(live))).all()
        ended = []
        for lease in candidates:
            if rules.expired(lease) and \
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
    devices = lease_devices.devices_of(session, ids)
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
def end(uuid, event, now, rules, project_id=None):
    """``give_back`` (the lessee) or ``revoke`` (the lessor): the lease
    ends now, its windows are cancelled, and the lessee's ARQs bound to
    its devices in a window begun are unbound (those Nova bound: marked
    for Nova to release). Returns (the lease, release jobs, [(arq uuid,
    instance uuid, scheduled)] unbound, [(arq uuid, instance uuid)] to ask
    Nova about); ``rules.by_binder`` tells which way each goes."""
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
        lease_releases.withdraw_notices(session, lease.id)
        session.execute(
            sa.update(WINDOW).where(
                WINDOW.lease_id == lease.id,
                WINDOW.state.in_(states.LEASE_WINDOW.sources(states.CANCEL)))
            .values(state=states.LEASE_WINDOW.target(states.CANCEL))
            .execution_options(synchronize_session=False))
        devices = lease_devices.devices_of(session, [lease.id]).get(
            lease.id, [])
        released, unbound, asked = [], [], []
        if begun:
            released, unbound, asked = lease_releases.unbind_lessee(
                session, {lease.project_id: [d.id for d in devices]},
                reason, now, rules)
        host_changes.mark_dirty(session, [d.hostname for d in devices])
        session.flush()
        session.refresh(lease)
        return _views(session, [lease], now)[0], released, unbound, asked
