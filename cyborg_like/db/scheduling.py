"""Standalone scheduling: the conductor picks the deployable of an ARQ
(``POST /v2/accelerator_requests/<uuid>/schedule``; docs/scheduling.md).

A scheduled binding is a Nova binding whose host and resource provider the
conductor chose: ``start`` moves the ARQ to BindStarted with a fresh
``bind_attempt`` (as ``arqs.start_bind``), ``candidates`` lists, in a few
bulk queries, the deployables that may serve it best first, and for each
in turn ``aim`` points the attempt at it and ``arqs.allocate`` -- the Nova
path, unchanged -- re-checks it under lock (the rules of
common/admission.py) and takes a handle with its conditional update. A
candidate lost to a concurrent binding fails that check and the next one
is tried; the database decides, however many conductors pick at once.

The Placement allocation a standalone binding claims is recorded on the
ARQ (``placement_consumer``, ``placement_rp_uuid``) so that any conductor
can bring the consumer's allocations back in line once the binding ended
(``desired_allocations``, ``stale``, ``forget``).
"""

import datetime
import json

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import admission
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import arq_handles
from cyborg_like.db import arq_rows
from cyborg_like.db import device_profiles
from cyborg_like.db import hosts
from cyborg_like.db import lease_windows
from cyborg_like.db import models

ARQ = models.ExtARQ
HANDLE = models.AttachHandle
DEPLOYABLE = models.Deployable
DEVICE = models.Device

PACK, SPREAD = 'pack', 'spread'
STRATEGIES = (PACK, SPREAD)


@api.retry_on_deadlock
def start(uuid, instance_uuid, hostname=None, project_id=None,
          conductor_uuid=None):
    """Initial/Unbound -> BindStarted, the conductor to choose the
    deployable (on ``hostname`` when given). Returns (bind attempt, the
    ARQ as the API shows it)."""
    with api.writer() as session:
        # A consumer gets its accelerators from Nova or from the
        # conductor, not both: Nova's own allocations would be mistaken
        # for ours. Only the caller's project's requests are looked at.
        nova_bound = session.scalar(arq_rows.scoped(
            sa.select(ARQ.uuid).where(ARQ.instance_uuid == instance_uuid,
                                      ARQ.uuid != uuid,
                                      ARQ.scheduled == sa.false()),
            project_id).limit(1))
        if nova_bound is not None:
            raise exception.InstanceAlreadyBound(instance=instance_uuid)
        attempt = uuidutils.generate_uuid()
        arq_rows.transition(session, uuid, states.BIND, {
            'hostname': hostname, 'device_rp_uuid': None,
            'instance_uuid': instance_uuid, 'state_reason': None,
            'bind_attempt': attempt, 'conductor_uuid': conductor_uuid,
            'scheduled': True}, project_id)
        row = session.execute(arq_rows.select().where(ARQ.uuid == uuid)).one()
        return attempt, arq_rows.row_to_dict(row)


def _usage(group_by, *joins):
    """Handles in use, free (and bindable) and awaiting release, per
    ``group_by`` column."""
    query = sa.select(
        group_by.label('key'),
        sa.func.sum(sa.case((HANDLE.in_use == sa.true(), 1), else_=0))
        .label('used'),
        sa.func.sum(sa.case((sa.and_(HANDLE.in_use == sa.false(),
                                     HANDLE.release_pending == sa.false()),
                             1), else_=0)).label('free'),
        sa.func.sum(sa.case((HANDLE.release_pending == sa.true(), 1),
                            else_=0)).label('pending')).select_from(HANDLE)
    for join in joins:
        query = query.join(*join)
    return query.group_by(group_by).subquery()


def candidates(uuid, attempt, hostname, preferences, host_down_after):
    """The deployables that may serve the ARQ's binding ``attempt``, best
    first: ``[{'id', 'uuid', 'rp_uuid', 'hostname'}]``.

    Three queries whatever the fleet: the ARQ and its profile group, the
    deployables of its resource class that are bindable now (device
    enabled and not drained, host up, a free handle), ordered by use for
    ``pack`` (fullest hosts, devices, deployables first) or ``spread``
    (emptiest first), and their attributes, matched against the group's
    traits by the rule every binding applies (``admission.unmet_by``).
    Deployables awaiting a release come last. ``arqs.allocate`` re-checks
    the one it takes under lock: this list may be stale by then.
    """
    preferences = preferences or {}
    with api.reader() as session:
        arq = session.scalars(sa.select(ARQ).where(
            ARQ.uuid == uuid, ARQ.bind_attempt == attempt,
            ARQ.state == states.BIND_STARTED)).first()
        if arq is None:
            raise exception.BindingSuperseded(uuid=uuid)
        profile = session.get(models.DeviceProfile, arq.device_profile_id)
        group = device_profiles.groups_of(profile)[
            arq.device_profile_group_id]
        rows = session.execute(
            _bindable(arq.resource_class, hostname, host_down_after,
                      arq.project_id)
            .order_by(*_order(preferences.get('strategy', PACK)))).all()
        attributes = {}
        if rows:
            for attribute in session.scalars(
                    sa.select(models.Attribute).where(
                        models.Attribute.deployable_id.in_(
                            [r.id for r in rows]))):
                attributes.setdefault(attribute.deployable_id, []).append(
                    attribute)
    numa = preferences.get('numa_node')
    return [{'id': r.id, 'uuid': r.uuid, 'rp_uuid': r.rp_uuid,
             'hostname': r.hostname, 'leased': bool(r.leased)} for r in rows
            if admission.unmet_by(r.uuid, attributes.get(r.id, []),
                                  group) is None
            and (numa is None or numa_node(r.std_board_info) == numa)]


_DEPLOYABLES = _usage(HANDLE.deployable_id)
_DEVICES = _usage(DEPLOYABLE.device_id,
                  (DEPLOYABLE, DEPLOYABLE.id == HANDLE.deployable_id))
_HOSTS = _usage(DEVICE.hostname,
                (DEPLOYABLE, DEPLOYABLE.id == HANDLE.deployable_id),
                (DEVICE, DEVICE.id == DEPLOYABLE.device_id))


def _bindable(resource_class, hostname, host_down_after, project_id=None):
    now = hosts.utcnow()
    cutoff = now - datetime.timedelta(seconds=host_down_after)
    rc = models.Attribute
    query = (
        sa.select(DEPLOYABLE.id, DEPLOYABLE.uuid, DEPLOYABLE.rp_uuid,
                  DEVICE.hostname, DEVICE.std_board_info,
                  # Lent to the ARQ's project now (db/leases.py): its
                  # Placement inventory is reserved, so it is not claimed.
                  lease_windows.in_window(DEVICE.id, now, project_id,
                                          other=False).label('leased'))
        .join(DEVICE, DEVICE.id == DEPLOYABLE.device_id)
        .join(models.Host, models.Host.hostname == DEVICE.hostname)
        .join(rc, sa.and_(rc.deployable_id == DEPLOYABLE.id, rc.key == 'rc'))
        .join(_DEPLOYABLES, _DEPLOYABLES.c.key == DEPLOYABLE.id)
        .join(_DEVICES, _DEVICES.c.key == DEVICE.id)
        .join(_HOSTS, _HOSTS.c.key == DEVICE.hostname)
        .where(rc.value == resource_class,
               # Placement offers none of a deployable without
               # accelerators (a GPU cut into MIG slices).
               DEPLOYABLE.num_accelerators > 0,
               DEVICE.status == 'enabled',
               DEVICE.drained_by.is_(None),
               DEVICE.service_state != states.DRAINED,
               models.Host.last_heartbeat >= cutoff,
               # Inside a window of another project's lease: not ours.
               ~lease_windows.in_window(DEVICE.id, now, project_id),
               sa.or_(_DEPLOYABLES.c.free > 0, _DEPLOYABLES.c.pending > 0)))
    if hostname:
        query = query.where(DEVICE.hostname == hostname)
    return query


def _order(strategy):
    # Awaiting a release: usable in a moment, tried last.
    waiting = sa.case((_DEPLOYABLES.c.free > 0, 0), else_=1)
    used = (_HOSTS.c.used, _DEVICES.c.used, _DEPLOYABLES.c.used)
    if strategy == SPREAD:
        by_use = [column.asc() for column in used]
    else:
        by_use = [column.desc() for column in used]
    return [waiting, *by_use, DEPLOYABLE.id]


def numa_node(std_board_info):
    """The NUMA node a device's board info records (the nvidia_gpu and
    pci drivers report ``numa_node``), or None (none recorded, or -1: the
    host has no NUMA)."""
    try:
        node = int(json.loads(std_board_info or '{}').get('numa_node'))
    except (TypeError, ValueError, AttributeError):
        return None
    return node if node >= 0 else None


@api.retry_on_deadlock
def aim(uuid, attempt, candidate, consumer=None):
    """Point binding ``attempt`` at ``candidate`` (one of ``candidates``)
    for ``arqs.allocate`` to take a handle of; with ``consumer``, record
    that the binding claims the candidate's provider in Placement for it.
    """
    values = {'hostname': candidate['hostname'],
              'device_rp_uuid': candidate['rp_uuid']}
    if consumer is not None:
        values.update(placement_consumer=consumer,
                      placement_rp_uuid=candidate['rp_uuid'])
    with api.writer() as session:
        aimed = session.execute(sa.update(ARQ).where(
            ARQ.uuid == uuid, ARQ.bind_attempt == attempt,
            ARQ.state == states.BIND_STARTED,
            ARQ.attach_handle_id.is_(None)).values(**values)).rowcount
    if aimed != 1:
        raise exception.BindingSuperseded(uuid=uuid)


@api.retry_on_deadlock
def give_back(uuid, attempt, hostname=None):
    """Placement refused the candidate binding ``attempt`` took: give its
    handle back and forget the candidate (``hostname``: the one the caller
    asked for). Returns the release jobs for the agent."""
    with api.writer() as session:
        arq = arq_rows.attempt(session, uuid, attempt, states.FINISH)
        held = arq_rows.handle_of(session, arq)
        arq.attach_handle_id = None
        arq.deployable_id = None
        arq.device_rp_uuid = None
        arq.hostname = hostname
        return [dict(job, **arq_rows.whose(arq))
                for job in arq_handles.free(session, held)]


def standalone(uuids):
    """Which of these ARQs are (or were last) bound standalone."""
    if not uuids:
        return set()
    with api.reader() as session:
        return set(session.scalars(sa.select(ARQ.uuid).where(
            ARQ.uuid.in_(list(uuids)), ARQ.scheduled == sa.true())))


# A recorded claim that no longer holds: the binding ended, or Nova bound
# the ARQ since.
_ENDED = sa.or_(ARQ.state.notin_(states.HOLDING), ARQ.scheduled == sa.false())


def claimed_consumers(uuids=None, instance_uuid=None, project_id=None):
    """Consumers whose allocations these ARQs recorded (before a delete
    takes the rows away)."""
    query = sa.select(ARQ.placement_consumer).where(
        ARQ.placement_consumer.is_not(None))
    if uuids is not None:
        query = query.where(ARQ.uuid.in_(uuids))
    else:
        query = query.where(ARQ.instance_uuid == instance_uuid)
    with api.reader() as session:
        return set(session.scalars(arq_rows.scoped(query, project_id)))


def stale(uuids=None):
    """Consumers with recorded claims of ended bindings (of ``uuids``)."""
    query = sa.select(ARQ.placement_consumer).where(
        ARQ.placement_consumer.is_not(None), _ENDED)
    if uuids is not None:
        query = query.where(ARQ.uuid.in_(list(uuids)))
    with api.reader() as session:
        return set(session.scalars(query.distinct()))


def desired_allocations(consumer):
    """What Placement should hold for ``consumer`` from standalone
    bindings: ({provider: {resource class: count}}, ids of the ARQs whose
    recorded claims ended, the projects of those ARQs), read together."""
    with api.reader() as session:
        rows = session.execute(sa.select(
            ARQ.id, ARQ.placement_rp_uuid, ARQ.resource_class, ARQ.state,
            ARQ.scheduled, ARQ.attach_handle_id, ARQ.project_id).where(
                ARQ.placement_consumer == consumer)).all()
    wanted, ended = {}, []
    for row in rows:
        if row.state not in states.HOLDING or not row.scheduled:
            ended.append(row.id)
        elif row.attach_handle_id is not None and row.placement_rp_uuid:
            counts = wanted.setdefault(row.placement_rp_uuid, {})
            counts[row.resource_class] = counts.get(
                row.resource_class, 0) + 1
    return wanted, ended, {row.project_id for row in rows}


def ours(rp_uuids):
    """Which of these resource providers are deployables of ours."""
    if not rp_uuids:
        return set()
    with api.reader() as session:
        return set(session.scalars(sa.select(DEPLOYABLE.rp_uuid).where(
            DEPLOYABLE.rp_uuid.in_(list(rp_uuids)))))


@api.retry_on_deadlock
def forget(ids):
    """The claims of these ARQs (``desired_allocations``' ended ones) are
    gone from Placement: stop recording them, unless a binding started
    since."""
    if not ids:
        return
    with api.writer() as session:
        session.execute(sa.update(ARQ).where(ARQ.id.in_(ids), _ENDED)
                        .values(placement_consumer=None,
                                placement_rp_uuid=None))
