"""Operations: long work on a host (programming, firmware flashing) that
clients poll."""

import datetime
import json

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import driver_families
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import conductors
from cyborg_like.db import hosts
from cyborg_like.db import models

OP = models.Operation

# Why the liveness sweep failed an operation whose conductor stopped (a
# rollout starts such a target again: db/rollouts.py).
INTERRUPTED = 'The operation was interrupted (its conductor stopped).'
# Why a conductor failed an operation it had accepted but no job of its
# carries any more (conductor/lost_work.py).
LOST = ('The operation was interrupted (its conductor lost it to a '
        'database or message bus error; its log says which).')
# The failures a rollout begins its target again after.
RESUMABLE = (INTERRUPTED, LOST)


def add(session, type_, target_uuid, project_id, conductor_uuid=None,
        hostname=None):
    """Within the caller's transaction: a new pending operation on host
    ``hostname``, carried out by conductor ``conductor_uuid``."""
    operation = OP(uuid=uuidutils.generate_uuid(), type=type_,
                   target_uuid=target_uuid, state=states.PENDING,
                   project_id=project_id, conductor_uuid=conductor_uuid,
                   hostname=hostname)
    session.add(operation)
    session.flush()
    return operation


def unfinished_for(session, target_uuid):
    return session.scalars(sa.select(OP).where(
        OP.target_uuid == target_uuid,
        OP.state.in_(states.UNFINISHED))).first()


def apply(uuid, event, detail=None, session=None, result=None):
    """Apply ``event`` of ``states.OPERATION`` to the operation, only from
    the states it allows; True when it changed. ``session``: within the
    caller's transaction; ``result``: a JSON-able record of what the work
    found."""
    if session is None:
        return _apply_alone(uuid, event, detail, result)
    machine = states.OPERATION
    values = {'state': machine.target(event), 'detail': detail}
    if result is not None:
        values['result'] = json.dumps(result, sort_keys=True)
    return session.execute(
        sa.update(OP).where(OP.uuid == uuid,
                            OP.state.in_(machine.sources(event)))
        .values(**values)).rowcount == 1


# Its own transaction: run again whole when it loses at COMMIT (Galera's
# certification, docs/ha.md), never inside a caller's.
@api.retry_on_deadlock
def _apply_alone(uuid, event, detail, result):
    with api.writer() as session:
        return apply(uuid, event, detail, session, result)


@api.retry_on_deadlock
def fail_interrupted(conductor_down_after, host_down_after, older_than,
                     older_than_by_type=None):
    """Fail unfinished operations nobody will finish (see
    arqs.fail_interrupted_binds), which releases their targets. Returns
    the uuids failed. ``older_than_by_type``: other age limits for some
    operation types (a firmware flash may take an hour)."""
    down = conductors.hosts_down(host_down_after)
    # Targets are deployables (programming) or devices (firmware).
    on_down_host = sa.union(
        sa.select(models.Deployable.uuid).join(models.Device).where(
            models.Device.hostname.in_(down)),
        sa.select(models.Device.uuid).where(models.Device.hostname.in_(
            down)))
    causes = (
        (OP.target_uuid.in_(on_down_host),
         'The host went down during the operation.'),
        # Driver operations name their host.
        (OP.hostname.in_(down),
         'The host went down during the operation.'),
        # NULL (a binding of a conductor older than liveness) is never
        # "not in": only the age limit applies to it. A driver operation
        # whose playbook runs is the agent's: it reports the end to any
        # conductor, so only its host going down or the age limit ends it.
        (sa.and_(OP.conductor_uuid.notin_(
            conductors.alive(conductor_down_after)),
            sa.not_(_agents())),
         INTERRUPTED),
    ) + tuple(_too_old(older_than, older_than_by_type or {}))
    with api.writer() as session:
        return [uuid for condition, reason in causes
                for uuid in _fail_where(session, condition, reason)]


def _fail_where(session, condition, reason):
    """Within the caller's transaction: fail the unfinished operations
    matching ``condition`` with ``reason``; their uuids."""
    machine = states.OPERATION
    uuids = session.scalars(sa.select(OP.uuid).where(
        OP.state.in_(machine.sources(states.FAIL)), condition)
        .with_for_update()).all()
    if uuids:
        session.execute(
            sa.update(OP).where(OP.uuid.in_(uuids),
                                OP.state.in_(machine.sources(states.FAIL)))
            .values(state=machine.target(states.FAIL), detail=reason))
        keep_drained(session, uuids, reason)
    return uuids


def unfinished_of(conductor_uuid):
    """The unfinished operations conductor ``conductor_uuid`` carries:
    all but a driver operation whose playbook runs (the agent's, which
    reports its end to any conductor)."""
    with api.reader() as session:
        return set(session.scalars(sa.select(OP.uuid).where(
            OP.conductor_uuid == conductor_uuid,
            OP.state.in_(states.UNFINISHED), sa.not_(_agents()))))


def _agents():
    return sa.and_(OP.type.in_(driver_families.OPERATION_TYPES),
                   OP.state.in_((states.RUNNING, states.CANCELLING)))


@api.retry_on_deadlock
def fail_lost(uuids):
    """Fail these operations (LOST), those still unfinished and not the
    agent's; returns the uuids failed."""
    with api.writer() as session:
        return _fail_where(session, sa.and_(OP.uuid.in_(uuids),
                                            sa.not_(_agents())), LOST)


def _too_old(older_than, by_type):
    """(condition, reason) per age limit: one per type in ``by_type``,
    ``older_than`` for the others."""
    age = sa.func.coalesce(OP.updated_at, OP.created_at)
    now = hosts.utcnow()
    others = age < now - datetime.timedelta(seconds=older_than)
    if by_type:
        others = sa.and_(OP.type.notin_(tuple(by_type)), others)
    yield others, 'The operation took more than %d seconds.' % older_than
    for type_, seconds in sorted(by_type.items()):
        yield (sa.and_(OP.type == type_,
                       age < now - datetime.timedelta(seconds=seconds)),
               'The operation took more than %d seconds.' % seconds)


def get(uuid, project_id=None):
    with api.reader() as session:
        query = sa.select(OP).where(OP.uuid == uuid)
        if project_id is not None:
            query = query.where(OP.project_id == project_id)
        operation = session.scalars(query).first()
        if operation is None:
            raise exception.NotFound('Operation %s could not be found.'
                                     % uuid)
        return to_dict(operation)


def list_operations(filters, limit, marker=None, sort_key='created_at',
                    sort_dir='asc', project_id=None):
    query = sa.select(OP)
    for name in ('target_uuid', 'state', 'type'):
        if filters.get(name):
            query = query.where(getattr(OP, name) == filters[name])
    if project_id is not None:
        query = query.where(OP.project_id == project_id)
    with api.reader() as session:
        query = api.paginate(session, query, OP, limit, marker, sort_key,
                             sort_dir)
        return [to_dict(o) for o in session.scalars(query)]


def to_dict(operation):
    """Every operation carries its host; driver operations also params
    and progress (db/driver_operations.py), which others show null."""
    return {
        'uuid': operation.uuid,
        'type': operation.type,
        'target_uuid': operation.target_uuid,
        'state': operation.state,
        'detail': operation.detail,
        'project_id': operation.project_id,
        'hostname': operation.hostname,
        'params': _load(operation.params),
        'progress': _load(operation.progress),
        'result': _load(operation.result),
        'created_at': api.isotime(operation.created_at),
        'updated_at': api.isotime(operation.updated_at),
    }


def keep_drained(session, uuids, reason):
    """Within the caller's transaction: the devices these failed driver
    operations drained stay drained, saying why (db/driver_operations.py).
    """
    for uuid in uuids:
        session.execute(
            sa.update(models.Device).where(models.Device.drained_by == uuid)
            .values(drain_reason=drain_text(uuid, reason))
            .execution_options(synchronize_session=False))


def drain_text(uuid, reason):
    return ('Driver operation %s ended: %s The devices stay drained until '
            'a driver operation on them succeeds (verify after fixing the '
            'host).' % (uuid, reason))


def _load(text):
    return json.loads(text) if text else None
