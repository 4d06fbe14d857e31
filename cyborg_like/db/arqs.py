"""Accelerator requests (ARQs): creation, binding, unbinding, deletion.

Every state change is a conditional UPDATE guarded by the states the
event may come from (``states.ARQ``), and an attach handle is taken with
``UPDATE ... SET in_use = true WHERE id = ? AND in_use = false``: whoever
changes the row owns the handle, however many conductors race for it.

A binding carries its own identity: ``start_bind`` gives each ARQ a fresh
``bind_attempt`` and every later step of that binding (allocate, finish,
fail) applies only ``WHERE bind_attempt = <its attempt>``. An unbind and a
new bind in between make the first attempt's queued work a no-op instead
of a second handle taken for one ARQ.
"""

import datetime

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import admission
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import arq_handles
from cyborg_like.db import arq_rows
from cyborg_like.db import bitstream_compat
from cyborg_like.db import conductors
from cyborg_like.db import device_profiles
from cyborg_like.db import hosts
from cyborg_like.db import lease_windows
from cyborg_like.db import models
from cyborg_like.db import operations
from cyborg_like.db import partitions
from cyborg_like.db import quotas
from cyborg_like.db import usage

ARQ = models.ExtARQ
HANDLE = models.AttachHandle


@api.retry_on_deadlock
def create(profile_name, project_id, group_id=None, limits=None,
           max_accelerators=None, own_limits=False):
    """One ARQ per requested accelerator of each group of the profile
    (of group ``group_id`` only, when given), counted against the
    project's ``limits`` ({resource class: n}; with ``own_limits``, the
    project's own limits override them: quotas.reserve); none when there
    would be more than ``max_accelerators``."""
    with api.writer() as session:
        profile = device_profiles._get(session, None, profile_name)
        groups = device_profiles.groups_of(profile)
        if group_id is not None and not 0 <= group_id < len(groups):
            raise exception.Invalid(
                'Device profile %s has no group %s.' % (profile_name,
                                                        group_id))
        wanted = [(gid, group) for gid, group in enumerate(groups)
                  if group_id is None or gid == group_id]
        _check_bound(profile_name, [g for _, g in wanted], max_accelerators)
        created = []
        for gid, group in wanted:
            for resource_class in accelerators_in(group):
                arq = ARQ(uuid=uuidutils.generate_uuid(),
                          state=states.INITIAL, device_profile_id=profile.id,
                          device_profile_group_id=gid, project_id=project_id,
                          resource_class=resource_class)
                session.add(arq)
                created.append(arq)
        if project_id is not None:
            quotas.reserve(session, project_id, _counts(created),
                           limits or {}, own_limits)
        session.flush()
        return [arq_rows.to_dict(arq, profile.name, None) for arq in created]


def _check_bound(profile_name, groups, max_accelerators):
    # Profiles made before the bound was lowered may ask for more: count
    # before creating anything.
    count = sum(_count_in(group) for group in groups)
    if max_accelerators is not None and count > max_accelerators:
        raise exception.TooManyAccelerators(
            name=profile_name, count=count, bound=max_accelerators)


def _count_in(group):
    return sum(int(count) for key, count in group.items()
               if key.startswith('resources:'))


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
    """ARQs by ``instance_uuid``, ``states``, ``uuids``, the health of the
    device they hold (``device_health``); scoped to ``project_id`` unless it
    is None (admin)."""
    query = arq_rows.select()
    if filters.get('instance_uuid'):
        query = query.where(ARQ.instance_uuid == filters['instance_uuid'])
    if filters.get('states'):
        query = query.where(ARQ.state.in_(filters['states']))
    if filters.get('uuids'):
        query = query.where(ARQ.uuid.in_(filters['uuids']))
    if filters.get('device_health'):
        query = query.where(ARQ.state.in_(states.HOLDING),
                            models.Device.health == filters['device_health'])
    query = arq_rows.scoped(query, project_id)
    with api.reader() as session:
        query = api.paginate(session, query, ARQ, limit, marker, sort_key,
                             sort_dir)
        return [arq_rows.row_to_dict(row) for row in session.execute(query)]


def get(uuid, project_id=None):
    with api.reader() as session:
        row = session.execute(arq_rows.scoped(
            arq_rows.select().where(ARQ.uuid == uuid), project_id)).first()
        if row is None:
            raise exception.ARQNotFound(uuid=uuid)
        return arq_rows.row_to_dict(row)


@api.retry_on_deadlock
def start_bind(bindings, project_id=None, conductor_uuid=None):
    """Move every ARQ of ``bindings`` ({uuid: fields}) to BindStarted, or
    none of them: a missing ARQ or one in the wrong state stops them all.
    ``conductor_uuid`` is the conductor that will finish the bindings.
    Returns {uuid: bind attempt}, which the binding's later steps name.
    """
    with api.writer() as session:
        # As Cyborg: no binding to an instance that already has requests
        # (hot add is not supported). Only the caller's project's are
        # looked at, so a bind cannot learn of another project's instance.
        instances = {f['instance_uuid'] for f in bindings.values()}
        taken = session.scalars(arq_rows.scoped(
            sa.select(ARQ.instance_uuid)
            .where(ARQ.instance_uuid.in_(instances))
            .where(ARQ.uuid.notin_(list(bindings))), project_id)).first()
        if taken is not None:
            raise exception.InstanceAlreadyBound(instance=taken)
        attempts = {}
        for uuid, fields in bindings.items():
            attempts[uuid] = uuidutils.generate_uuid()
            values = dict(fields, state_reason=None,
                          bind_attempt=attempts[uuid],
                          conductor_uuid=conductor_uuid, scheduled=False)
            arq_rows.transition(session, uuid, states.BIND, values, project_id)
        return attempts


@api.retry_on_deadlock
def allocate(uuid, attempt, host_down_after):
    """Take a free attach handle of the ARQ's device for binding
    ``attempt``.

    Returns what the host's agent needs to prepare the handle; raises
    BindFailed when the device cannot serve this request and
    BindingSuperseded when the attempt is no longer the ARQ's binding.
    """
    with api.writer() as session:
        arq = arq_rows.attempt(session, uuid, attempt, states.FINISH)
        profile = session.get(models.DeviceProfile, arq.device_profile_id)
        group = device_profiles.groups_of(profile)[
            arq.device_profile_group_id]
        deployable = _deployable_for(session, arq)
        _check_usable(session, deployable, group, host_down_after)
        _check_not_leased(session, deployable, arq.project_id)
        # Before any handle is taken or agent called: the catalog image
        # the group asks for must fit the region.
        image = bitstream_compat.for_group(session, deployable, group)
        handle = arq_handles.take_handle(session, deployable)
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
            'bitstream_id': bitstream_compat.loaded_id(image) if image
            else group.get('accel:bitstream_id'),
            'image': bitstream_compat.image_job(image) if image else None,
            'attach_handle': arq_rows.handle_dict(handle),
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
    """The facts the admission rules (common/admission.py) ask about,
    read under the bind's locks; raises their refusal."""
    device = deployable.device
    programming = operations.unfinished_for(session, deployable.uuid)
    # A locking read: the latest committed drain, whatever snapshot this
    # transaction started from (an operation's drain locked the deployable
    # first; a health drain is written with the device row locked).
    latest = session.execute(
        sa.select(models.Device.drained_by, models.Device.drain_reason,
                  models.Device.service_state, models.Device.health_reasons)
        .where(models.Device.id == device.id).with_for_update()).one()
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=host_down_after)
    host = session.scalars(sa.select(models.Host).where(
        models.Host.hostname == device.hostname)).first()
    admission.refusal(admission.Facts(
        deployable, device,
        programming=programming is not None,
        release_pending=any(h.release_pending
                            for h in deployable.attach_handles),
        latest=latest,
        # Under the device's row lock, taken just above by every bind of
        # any of its deployables.
        beside=partitions.held_beside(session, deployable),
        host_up=host is not None and host.last_heartbeat is not None
        and host.last_heartbeat >= cutoff), group)


def _check_not_leased(session, deployable, project_id):
    """Inside a window of a lease of the device, only its lessee binds
    to it (db/leases.py)."""
    lease = lease_windows.leased_to_other(session, deployable.device_id,
                                          project_id, hosts.utcnow())
    if lease is not None:
        # The ARQ's owner reads the reason: the lease is not named.
        raise exception.BindFailed(
            reason='Device %s is leased to another project until %s.' % (
                deployable.device.uuid, api.isotime(lease.ends_at)))


@api.retry_on_deadlock
def finish_bind(uuid, attempt, programmed_bitstream_id=None):
    """BindStarted -> Bound; False when the attempt was superseded."""
    with api.writer() as session:
        done = arq_rows.move(session, ARQ.uuid == uuid, states.FINISH, attempt)
        if done:
            # Counted from this commit on (db/usage.py).
            usage.open_record(session, uuid)
        if done and programmed_bitstream_id:
            deployable_id = session.scalar(
                sa.select(ARQ.deployable_id).where(ARQ.uuid == uuid))
            session.execute(
                sa.update(models.Deployable)
                .where(models.Deployable.id == deployable_id)
                .values(bitstream_id=programmed_bitstream_id))
        return done


@api.retry_on_deadlock
def fail_bind(uuid, attempt, reason):
    """BindStarted -> BindFailed with ``reason``, giving back the handle;
    None (and nothing changed) when the attempt was superseded."""
    with api.writer() as session:
        try:
            arq = arq_rows.attempt(session, uuid, attempt, states.FAIL)
        except exception.BindingSuperseded:
            return None
        return _fail(session, arq, reason)


# On Galera a conductor's write meets another's at COMMIT (DBDeadlock;
# tests/cluster/test_galera_node.py): run it again whole.
@api.retry_on_deadlock
def fail_interrupted_binds(conductor_down_after, host_down_after,
                           older_than):
    """Fail the bindings nobody will finish, giving their handles back:
    those of a conductor that stopped heartbeating (or stopped cleanly with
    work left), those on a host whose agent is down, and any older than
    ``older_than`` seconds (a wedged worker). Returns ``[(arq uuid,
    instance uuid, released)]``."""
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=older_than)
    causes = (
        (ARQ.hostname.in_(conductors.hosts_down(host_down_after)),
         'Host %(host)s went down while binding; bind again.'),
        # NULL (a binding of a conductor older than liveness) is never
        # "not in": only the age limit applies to it.
        (ARQ.conductor_uuid.notin_(conductors.alive(conductor_down_after)),
         'The binding was interrupted (its conductor stopped); bind '
         'again.'),
        (sa.func.coalesce(ARQ.updated_at, ARQ.created_at) < cutoff,
         'The binding took more than %d seconds; bind again.'
         % older_than),
    )
    with api.writer() as session:
        return [failed for condition, reason in causes
                for failed in _fail_where(session, condition, reason)]


def binding_attempts_of(conductor_uuid):
    """The attempts of the bindings conductor ``conductor_uuid`` has
    under way (BindStarted)."""
    with api.reader() as session:
        return set(session.scalars(sa.select(ARQ.bind_attempt).where(
            ARQ.conductor_uuid == conductor_uuid,
            ARQ.state.in_(states.ARQ.sources(states.FAIL)))))


@api.retry_on_deadlock
def fail_lost_binds(attempts):
    """Fail the bindings of these attempts still under way, their
    conductor's job lost (conductor/lost_work.py); as
    fail_interrupted_binds answers."""
    with api.writer() as session:
        return _fail_where(
            session, ARQ.bind_attempt.in_(attempts),
            'The binding was interrupted (its conductor lost it to a '
            'database or message bus error); bind again.')


def _fail_where(session, condition, reason):
    failed = []
    stale = session.scalars(sa.select(ARQ).where(
        ARQ.state.in_(states.ARQ.sources(states.FAIL)), condition)
        .with_for_update()).all()
    for arq in stale:
        released = _fail(session, arq, reason % {'host': arq.hostname})
        if released is not None:
            failed.append((arq.uuid, arq.instance_uuid, released))
    return failed


def _fail(session, arq, reason):
    released = arq_rows.handle_of(session, arq)
    if not arq_rows.move(session, ARQ.id == arq.id, states.FAIL,
                         arq.bind_attempt, state_reason=reason[:4000],
                         attach_handle_id=None, deployable_id=None):
        return None
    return arq_handles.free(session, released)


@api.retry_on_deadlock
def unbind(uuids, project_id=None, unbind_bound=True):
    """BindStarted/Bound/BindFailed -> Unbound, giving handles back.

    Returns the handles the agents should release. ARQs already unbound
    or never bound are left as they are, so Nova may retry. Unless
    ``unbind_bound``, one Bound or BindStarted ARQ among them unbinds
    none (checked on the rows this transaction locked).
    """
    with api.writer() as session:
        arqs = arq_rows.get_all(session, uuids, project_id, for_update=True)
        if not unbind_bound:
            _refuse_bound(arqs, exception.ARQUnbindBoundForbidden)
        return unbind_rows(session, arqs)


def unbind_rows(session, arqs, reason=None):
    """Within the caller's transaction: unbind these ARQs (rows it
    locked), as ``unbind`` does; a lease's end (db/leases.py) gives its
    ``reason``. Returns the release jobs."""
    released = []
    # Their bindings stop counting in this transaction (db/usage.py).
    usage.close_records(session, [a.uuid for a in arqs
                                  if a.state == states.BOUND])
    for arq in arqs:
        if not states.ARQ.allows(arq.state, states.UNBIND):
            continue
        held = arq_rows.handle_of(session, arq)
        whose = arq_rows.whose(arq)
        if arq_rows.move(session, ARQ.id == arq.id, states.UNBIND, None,
                         state_reason=reason, hostname=None,
                         device_rp_uuid=None, instance_uuid=None,
                         bind_attempt=None, attach_handle_id=None,
                         deployable_id=None, lease_ends_at=None,
                         lease_starts_at=None, release_asked_at=None):
            released += [dict(job, **whose)
                         for job in arq_handles.free(session, held)]
    return released


@api.retry_on_deadlock
def delete(uuids=None, instance_uuid=None, project_id=None,
           delete_bound=False):
    """Delete ARQs by uuid (all must exist) or by instance (idempotent).

    Unless ``delete_bound``, one Bound or BindStarted ARQ (a device an
    instance holds or is being given) among them deletes none: it is
    checked on the rows this transaction read and deletes.
    """
    with api.writer() as session:
        # Locked: a bind starting meanwhile cannot slip past the check.
        if uuids is not None:
            arqs = arq_rows.get_all(session, uuids, project_id,
                                    for_update=True)
        else:
            arqs = session.scalars(arq_rows.scoped(sa.select(ARQ).where(
                ARQ.instance_uuid == instance_uuid), project_id)
                .with_for_update()).all()
        if not delete_bound:
            _refuse_bound(arqs)
        # Deleting a Bound ARQ ends its binding: the record stays.
        usage.close_records(session, [a.uuid for a in arqs
                                      if a.state == states.BOUND])
        released = []
        for arq in arqs:
            held = arq_rows.handle_of(session, arq)
            released += [dict(job, **arq_rows.whose(arq))
                         for job in arq_handles.free(session, held)]
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
                   ARQ.state.in_(states.HOLDING))
        ).all()
        return [{'driver_name': row.driver_name,
                 'controlpath_id': models.wire_form(row.cpid_type,
                                                    row.cpid_info),
                 'attach_handle': arq_rows.handle_dict(row.AttachHandle)}
                for row in rows]


def holding(device_uuids):
    """ARQs holding (or getting) a handle of these devices: the workloads
    to tell when a device fails."""
    with api.reader() as session:
        rows = session.execute(
            sa.select(ARQ.uuid, ARQ.instance_uuid, ARQ.project_id,
                      ARQ.state, models.Device.uuid.label('device_uuid'),
                      models.Device.hostname)
            .join(HANDLE, ARQ.attach_handle_id == HANDLE.id)
            .join(models.Deployable,
                  models.Deployable.id == HANDLE.deployable_id)
            .join(models.Device,
                  models.Device.id == models.Deployable.device_id)
            .where(models.Device.uuid.in_(device_uuids),
                   ARQ.state.in_(states.HOLDING))
            .order_by(ARQ.id)).all()
        return [row._asdict() for row in rows]


def _refuse_bound(arqs, refusal=exception.ARQDeleteBoundForbidden):
    held = sorted((a.uuid, a.state) for a in arqs
                  if a.state in states.HOLDING)
    if held:
        uuid, state = held[0]
        raise refusal(uuid=uuid, state=state)

