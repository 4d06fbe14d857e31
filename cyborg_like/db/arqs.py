"""Accelerator requests (ARQs): creation, binding, unbinding, deletion.

Every state change is a conditional UPDATE guarded by the states it may
come from (common/states.py), and an attach handle is taken with
``UPDATE ... SET in_use = true WHERE id = ? AND in_use = false``: whoever
changes the row owns the handle, however many conductors race for it.
"""

import datetime
import json

from oslo_db import api as oslo_db_api
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import device_profiles
from cyborg_like.db import hosts
from cyborg_like.db import models
from cyborg_like.db import operations
from cyborg_like.db import quotas

ARQ = models.ExtARQ
HANDLE = models.AttachHandle


# Two first requests of a project may both add its quota row: on MariaDB
# the loser's transaction dies in a deadlock and is simply run again.
_retry_deadlock = oslo_db_api.wrap_db_retry(max_retries=5,
                                            retry_on_deadlock=True)


@_retry_deadlock
def create(profile_name, project_id, group_id=None, limits=None):
    """One ARQ per requested accelerator of each group of the profile,
    counted against the project's ``limits`` ({resource class: n})."""
    with api.writer() as session:
        profile = device_profiles._get(session, None, profile_name)
        groups = device_profiles.groups_of(profile)
        if group_id is not None and not 0 <= group_id < len(groups):
            raise exception.Invalid(
                'Device profile %s has no group %s.' % (profile_name,
                                                        group_id))
        created = []
        for gid, group in enumerate(groups):
            if group_id is not None and gid != group_id:
                continue
            for resource_class in accelerators_in(group):
                arq = ARQ(uuid=uuidutils.generate_uuid(),
                          state=states.INITIAL, device_profile_id=profile.id,
                          device_profile_group_id=gid, project_id=project_id,
                          resource_class=resource_class)
                session.add(arq)
                created.append(arq)
        if project_id is not None:
            quotas.reserve(session, project_id, _counts(created),
                           limits or {})
        session.flush()
        return [_to_dict(arq, profile.name, None) for arq in created]


def accelerators_in(group):
    """The resource class of each accelerator a profile group asks for."""
    return [key.split(':', 1)[1]
            for key, count in group.items() if key.startswith('resources:')
            for _ in range(int(count))]


def _counts(arqs):
    counts = {}
    for arq in arqs:
        if arq.resource_class:
            counts[arq.resource_class] = counts.get(arq.resource_class, 0) + 1
    return counts


def list_arqs(filters, limit, marker=None, sort_key='created_at',
              sort_dir='asc', project_id=None):
    """ARQs by ``instance_uuid``, ``states``, ``uuids``; scoped to
    ``project_id`` unless it is None (admin)."""
    query = _select()
    if filters.get('instance_uuid'):
        query = query.where(ARQ.instance_uuid == filters['instance_uuid'])
    if filters.get('states'):
        query = query.where(ARQ.state.in_(filters['states']))
    if filters.get('uuids'):
        query = query.where(ARQ.uuid.in_(filters['uuids']))
    query = _scoped(query, project_id)
    with api.reader() as session:
        query = api.paginate(session, query, ARQ, limit, marker, sort_key,
                             sort_dir)
        return [_row_to_dict(row) for row in session.execute(query)]


def get(uuid, project_id=None):
    with api.reader() as session:
        row = session.execute(
            _scoped(_select().where(ARQ.uuid == uuid), project_id)).first()
        if row is None:
            raise exception.ARQNotFound(uuid=uuid)
        return _row_to_dict(row)


def start_bind(bindings, project_id=None):
    """Move every ARQ of ``bindings`` ({uuid: fields}) to BindStarted, or
    none of them: a missing ARQ or one in the wrong state stops them all.
    """
    with api.writer() as session:
        instances = {f['instance_uuid'] for f in bindings.values()}
        taken = session.scalars(
            sa.select(ARQ.instance_uuid)
            .where(ARQ.instance_uuid.in_(instances))
            .where(ARQ.uuid.notin_(list(bindings)))).first()
        if taken is not None:
            raise exception.InstanceAlreadyBound(instance=taken)
        for uuid, fields in bindings.items():
            values = dict(fields, state=states.BIND_STARTED,
                          state_reason=None)
            _transition(session, uuid, states.BIND_STARTED, values,
                        project_id)


def allocate(uuid, host_down_after):
    """Take a free attach handle of the ARQ's device for it.

    Returns what the host's agent needs to prepare the handle; raises
    BindFailed when the device cannot serve this request.
    """
    with api.writer() as session:
        arq = session.scalars(sa.select(ARQ).where(
            ARQ.uuid == uuid, ARQ.state == states.BIND_STARTED)).first()
        if arq is None:
            raise exception.ARQBadState(uuid=uuid, state='(changed)',
                                        expected=[states.BIND_STARTED])
        profile = session.get(models.DeviceProfile, arq.device_profile_id)
        group = device_profiles.groups_of(profile)[
            arq.device_profile_group_id]
        deployable = _deployable_for(session, arq)
        _check_usable(session, deployable, group, host_down_after)
        handle = _take_handle(session, deployable)
        arq.attach_handle_id = handle.id
        arq.deployable_id = deployable.id
        device = deployable.device
        cpid = device.controlpath_ids[0]
        return {
            'arq_uuid': arq.uuid,
            'hostname': device.hostname,
            'driver_name': deployable.driver_name,
            'controlpath_id': cpid.to_wire(),
            'deployable_name': deployable.name,
            'current_bitstream_id': deployable.bitstream_id,
            'bitstream_id': group.get('accel:bitstream_id'),
            'attach_handle': _handle_dict(handle),
        }


def _deployable_for(session, arq):
    # Locked, so a program operation cannot start on it meanwhile.
    found = session.scalar(
        sa.select(models.Deployable.id)
        .join(models.Device)
        .where(models.Deployable.rp_uuid == arq.device_rp_uuid,
               models.Device.hostname == arq.hostname)
        .with_for_update(of=models.Deployable))
    if found is None:
        raise exception.BindFailed(
            reason='No deployable with resource provider %s on host %s.'
            % (arq.device_rp_uuid, arq.hostname))
    return session.get(models.Deployable, found)


def _check_usable(session, deployable, group, host_down_after):
    device = deployable.device
    if operations.unfinished_for(session, deployable.uuid) is not None:
        raise exception.BindFailed(reason='Deployable %s is being '
                                          'programmed.' % deployable.uuid)
    if device.health == 'unhealthy':
        raise exception.BindFailed(reason='Device %s is unhealthy: %s' % (
            device.uuid, device.health_reasons))
    if device.status != 'enabled':
        raise exception.BindFailed(reason='Device %s is %s.' % (
            device.uuid, device.status))
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=host_down_after)
    host = session.scalars(sa.select(models.Host).where(
        models.Host.hostname == device.hostname)).first()
    if host is None or host.last_heartbeat is None \
            or host.last_heartbeat < cutoff:
        raise exception.BindFailed(
            reason='Host %s is down (no recent heartbeat).' % device.hostname)
    attributes = {a.key: a.value for a in deployable.attributes}
    traits = {v for k, v in attributes.items() if k.startswith('trait')}
    for key, value in group.items():
        name = key.split(':', 1)[1]
        if key.startswith('resources:') and attributes.get('rc') != name:
            raise exception.BindFailed(
                reason='Deployable %s provides %s, not %s.' % (
                    deployable.uuid, attributes.get('rc'), name))
        if key.startswith('trait:') and (value == 'required') != (
                name in traits):
            raise exception.BindFailed(
                reason='Deployable %s does not satisfy trait %s=%s.' % (
                    deployable.uuid, name, value))


def _take_handle(session, deployable):
    candidates = session.scalars(
        sa.select(HANDLE.id).where(HANDLE.deployable_id == deployable.id,
                                   HANDLE.in_use == sa.false())
        .order_by(HANDLE.id)).all()
    for handle_id in candidates:
        taken = session.execute(
            sa.update(HANDLE).where(HANDLE.id == handle_id,
                                    HANDLE.in_use == sa.false())
            .values(in_use=True)).rowcount
        if taken == 1:
            return session.get(HANDLE, handle_id)
    raise exception.BindFailed(
        reason='No free attach handle on deployable %s.' % deployable.uuid)


def finish_bind(uuid, programmed_bitstream_id=None):
    """BindStarted -> Bound; False when the ARQ moved on meanwhile."""
    with api.writer() as session:
        done = session.execute(
            sa.update(ARQ).where(ARQ.uuid == uuid,
                                 ARQ.state == states.BIND_STARTED)
            .values(state=states.BOUND)).rowcount == 1
        if done and programmed_bitstream_id:
            deployable_id = session.scalar(
                sa.select(ARQ.deployable_id).where(ARQ.uuid == uuid))
            session.execute(
                sa.update(models.Deployable)
                .where(models.Deployable.id == deployable_id)
                .values(bitstream_id=programmed_bitstream_id))
        return done


def fail_bind(uuid, reason):
    """BindStarted -> BindFailed with ``reason``; gives back the handle."""
    with api.writer() as session:
        arq = session.scalars(sa.select(ARQ).where(
            ARQ.uuid == uuid, ARQ.state == states.BIND_STARTED)).first()
        if arq is None:
            return None
        released = _release(session, arq)
        arq.state = states.BIND_FAILED
        arq.state_reason = reason[:4000]
        return released


def fail_interrupted_binds(older_than):
    """BindStarted for more than ``older_than`` seconds means the conductor
    finishing it is gone (stopped, crashed): fail them, giving handles
    back. Returns ``[(arq uuid, instance uuid, released)]``."""
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=older_than)
    with api.writer() as session:
        stale = session.scalars(sa.select(ARQ).where(
            ARQ.state == states.BIND_STARTED,
            sa.func.coalesce(ARQ.updated_at, ARQ.created_at) < cutoff)
            .with_for_update()).all()
        failed = []
        for arq in stale:
            released = _release(session, arq)
            arq.state = states.BIND_FAILED
            arq.state_reason = ('The binding was interrupted (its conductor '
                                'stopped); bind again.')
            failed.append((arq.uuid, arq.instance_uuid, released))
        return failed


def unbind(uuids, project_id=None):
    """Bound/BindFailed/BindStarted -> Unbound, giving handles back.

    Returns the handles the agents should release. ARQs already unbound
    or never bound are left as they are, so Nova may retry.
    """
    with api.writer() as session:
        arqs = _get_all(session, uuids, project_id)
        released = []
        for arq in arqs:
            if arq.state not in states.TRANSITIONS[states.UNBOUND]:
                continue
            released += _release(session, arq)
            arq.state = states.UNBOUND
            arq.state_reason = None
            arq.hostname = arq.device_rp_uuid = arq.instance_uuid = None
        return released


@_retry_deadlock
def delete(uuids=None, instance_uuid=None, project_id=None):
    """Delete ARQs by uuid (all must exist) or by instance (idempotent)."""
    with api.writer() as session:
        if uuids is not None:
            arqs = _get_all(session, uuids, project_id)
        else:
            arqs = session.scalars(_scoped(sa.select(ARQ).where(
                ARQ.instance_uuid == instance_uuid), project_id)).all()
        released = []
        for arq in arqs:
            released += _release(session, arq)
            session.delete(arq)
        by_project = {}
        for arq in arqs:
            by_project.setdefault(arq.project_id, []).append(arq)
        for owner, owned in by_project.items():
            if owner is not None:
                quotas.release(session, owner, _counts(owned))
        return released


def bound_on(hostname):
    """Handles held by ARQs on ``hostname``, for its agent to restore."""
    with api.reader() as session:
        rows = session.execute(
            sa.select(models.Deployable.driver_name,
                      models.ControlpathID.cpid_type,
                      models.ControlpathID.cpid_info, HANDLE)
            .join(HANDLE, HANDLE.deployable_id == models.Deployable.id)
            .join(ARQ, ARQ.attach_handle_id == HANDLE.id)
            .join(models.Device,
                  models.Device.id == models.Deployable.device_id)
            .join(models.ControlpathID,
                  models.ControlpathID.device_id == models.Device.id)
            .where(models.Device.hostname == hostname,
                   ARQ.state.in_([states.BOUND, states.BIND_STARTED]))
        ).all()
        return [{'driver_name': row.driver_name,
                 'controlpath_id': models.wire_form(row.cpid_type,
                                                    row.cpid_info),
                 'attach_handle': _handle_dict(row.AttachHandle)}
                for row in rows]


def _get_all(session, uuids, project_id):
    arqs = session.scalars(_scoped(
        sa.select(ARQ).where(ARQ.uuid.in_(uuids)), project_id)).all()
    missing = set(uuids) - {a.uuid for a in arqs}
    if missing:
        raise exception.ARQNotFound(uuid=sorted(missing)[0])
    return arqs


def _release(session, arq):
    """Give the ARQ's attach handle back; what the agent must undo."""
    if arq.attach_handle_id is None:
        return []
    handle = session.get(HANDLE, arq.attach_handle_id)
    handle.in_use = False
    deployable = session.get(models.Deployable, handle.deployable_id)
    device = deployable.device
    cpid = device.controlpath_ids[0]
    arq.attach_handle_id = arq.deployable_id = None
    return [{'hostname': device.hostname,
             'driver_name': deployable.driver_name,
             'controlpath_id': cpid.to_wire(),
             'attach_handle': _handle_dict(handle)}]


def _transition(session, uuid, new_state, values, project_id):
    query = sa.update(ARQ).where(
        ARQ.uuid == uuid, ARQ.state.in_(states.TRANSITIONS[new_state]))
    if project_id is not None:
        query = query.where(ARQ.project_id == project_id)
    if session.execute(query.values(**values)).rowcount == 1:
        return
    current = session.scalar(_scoped(
        sa.select(ARQ.state).where(ARQ.uuid == uuid), project_id))
    if current is None:
        raise exception.ARQNotFound(uuid=uuid)
    raise exception.ARQBadState(uuid=uuid, state=current,
                                expected=list(states.TRANSITIONS[new_state]))


def _scoped(query, project_id):
    if project_id is None:
        return query
    return query.where(ARQ.project_id == project_id)


def _select():
    # The profile name and the handle come in the same query as the ARQ.
    return (sa.select(ARQ, models.DeviceProfile.name, HANDLE)
            .join(models.DeviceProfile,
                  ARQ.device_profile_id == models.DeviceProfile.id)
            .outerjoin(HANDLE, ARQ.attach_handle_id == HANDLE.id))


def _handle_dict(handle):
    return {'uuid': handle.uuid, 'attach_type': handle.attach_type,
            'attach_info': json.loads(handle.attach_info)}


def _row_to_dict(row):
    arq, profile_name, handle = row
    return _to_dict(arq, profile_name, handle)


def _to_dict(arq, profile_name, handle):
    bound = handle is not None and arq.state == states.BOUND
    return {
        'uuid': arq.uuid,
        'state': arq.state,
        'state_reason': arq.state_reason,
        'device_profile_name': profile_name,
        'device_profile_group_id': arq.device_profile_group_id,
        'hostname': arq.hostname,
        'device_rp_uuid': arq.device_rp_uuid,
        'instance_uuid': arq.instance_uuid,
        'project_id': arq.project_id,
        'resource_class': arq.resource_class,
        'attach_handle_type': handle.attach_type if bound else '',
        'attach_handle_uuid': handle.uuid if bound else None,
        'attach_handle_info': json.loads(handle.attach_info) if bound
        else {},
        'created_at': api.isotime(arq.created_at),
        'updated_at': api.isotime(arq.updated_at),
    }
