"""The targets of fleet rollouts (docs/rollouts.md): the conditional
updates that move them through ``states.ROLLOUT_TARGET`` and the queries
a conductor's step reads them with. Every change of a target's state is
an event of the declared machine, applied only from the states it allows;
what differs per kind of rollout is asked of db/rollout_kinds.py.

A step is a constant number of queries whatever the number of targets,
plus one transaction per target it starts: that target's conditional
update ``pending -> in_progress`` and its operation, together, so no
target is changed twice however many conductors step the rollout.
"""

import datetime
import json

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import models
from cyborg_like.db import operations
from cyborg_like.db import rollout_kinds

RO = models.Rollout
RT = models.RolloutTarget
OP = models.Operation
KINDS = rollout_kinds.KINDS
MACHINE = states.ROLLOUT_TARGET

INTERRUPTED_AGAIN = ('Its operation was interrupted (its conductor '
                     'stopped or lost it); begun again.')
CUT_SHORT_REASON = 'Its gate was cut short: the rollout was aborted.'


def _moved(event, *where, **values):
    """The conditional update of ``event``: targets matching ``where``
    and in a state the event allows move to the state it leads to."""
    return sa.update(RT).where(
        *where, RT.state.in_(MACHINE.sources(event))).values(
        state=MACHINE.target(event), **values).execution_options(
        synchronize_session=False)


def cut_short(session, which, now):
    """Gating targets of an aborted rollout: changed, never verified (no
    conductor drives an aborted rollout's gates)."""
    return session.execute(_moved(
        states.CUT_SHORT, which, reason=CUT_SHORT_REASON,
        finished_at=now)).rowcount


@api.retry_on_deadlock
def sync_operations(now, retries=0):
    """Targets whose operation ended move on (for every rollout, whatever
    its state: an aborted rollout's last operations are recorded too, and
    its targets left gating marked unverified): six conditional updates.
    First, a target whose operation its conductor's death interrupted is
    begun again, up to ``retries`` times (never where its kind says not:
    a card's firmware flash, rollout_kinds.Firmware)."""
    ended = {}
    retried = [k.target_kind for k in KINDS.values() if k.retry_interrupted]
    with api.writer() as session:
        ended[(states.IN_PROGRESS, states.RETRY)] = session.execute(_moved(
            states.RETRY, RT.state == states.IN_PROGRESS,
            RT.target_kind.in_(retried), RT.attempts <= retries,
            RT.operation_uuid.in_(sa.select(OP.uuid).where(
                OP.state == states.FAILED,
                OP.detail.in_(operations.RESUMABLE))),
            reason=INTERRUPTED_AGAIN)).rowcount
        for column, source, ok_event in (
                (RT.operation_uuid, states.IN_PROGRESS, states.FINISH),
                (RT.rollback_operation_uuid, states.TARGET_ROLLING_BACK,
                 states.REVERTED)):
            ended.update(_ended(session, column, source, ok_event, now))
        # An operation that ended after its rollout's abort: its target
        # reached gating above, where no gate will run.
        ended[(states.GATING, states.CUT_SHORT)] = cut_short(
            session, RT.rollout_id.in_(sa.select(RO.id).where(
                RO.state == states.ROLLOUT_ABORTED)), now)
    return ended


def _ended(session, column, source, ok_event, now):
    """Targets in ``source`` whose operation (``column``) ended: two
    conditional updates, {(source, event): count}."""
    detail = sa.select(OP.detail).where(OP.uuid == column).scalar_subquery()
    ended = {}
    for op_states, event in (((states.SUCCEEDED,), ok_event),
                             ((states.FAILED, states.CANCELLED),
                              states.FAIL)):
        values = {'finished_at': now}
        if event == states.FAIL:
            values['reason'] = (
                sa.literal('Rollback failed: ') + detail
                if source == states.TARGET_ROLLING_BACK else detail)
        ended[(source, event)] = session.execute(_moved(
            event, RT.state == source, column.in_(sa.select(OP.uuid).where(
                OP.state.in_(op_states))), **values)).rowcount
    return ended


def _unhealthy_since():
    """Targets whose device read unhealthy after the change ended."""
    return sa.exists().where(
        models.DeviceMetric.device_id == RT.device_id,
        models.DeviceMetric.healthy.is_(False),
        models.DeviceMetric.recorded_at >= RT.finished_at)


@api.retry_on_deadlock
def gate(rollout_id, gate_seconds, now, kind, image):
    """The health gate of the rollout's changed targets: failed at once
    when their device (a host's: any of the driver family's) turned
    unhealthy or left service, or the target does not read back what was
    applied (rollout_kinds' ``readback``); passed once they stayed well
    for ``gate_seconds``. Three updates."""
    kind = KINDS[kind]
    gating = (RT.rollout_id == rollout_id, RT.state == states.GATING)
    with api.writer() as session:
        sick = session.execute(_moved(
            states.FAIL, *gating, sa.or_(kind.unwell(image),
                                         _unhealthy_since()),
            reason=('Health gate: the device turned unhealthy or left '
                    'service after the change.'))).rowcount
        wrong = session.execute(_moved(
            states.FAIL, *gating, kind.readback(image),
            reason=('Health gate: the %s does not read back the %s '
                    'applied.' % kind.readback_words))).rowcount
        passed = session.execute(_moved(
            states.PASS, *gating, RT.finished_at <= now - datetime.timedelta(
                seconds=gate_seconds))).rowcount
    return {'failed': sick + wrong, 'passed': passed}


def progress(rollout_id):
    """({wave: {state: count}}, the first failed target or None, the
    unfinished targets per host): three queries."""
    with api.reader() as session:
        waves = {}
        for wave, state, count in session.execute(
                sa.select(RT.wave, RT.state, sa.func.count())
                .where(RT.rollout_id == rollout_id)
                .group_by(RT.wave, RT.state)):
            waves.setdefault(wave, {})[state] = count
        failed = session.execute(
            sa.select(RT.target_uuid, RT.hostname, RT.wave, RT.reason)
            .where(RT.rollout_id == rollout_id,
                   RT.state == states.TARGET_FAILED)
            .order_by(RT.finished_at, RT.id).limit(1)).first()
        busy_hosts = dict(session.execute(
            sa.select(RT.hostname, sa.func.count())
            .where(RT.rollout_id == rollout_id, RT.state.in_(
                (states.IN_PROGRESS, states.TARGET_ROLLING_BACK)))
            .group_by(RT.hostname)).all())
    return waves, (failed._asdict() if failed else None), busy_hosts


def candidates(rollout_id, wave, limit, retry_skipped, kind, image):
    """Up to ``limit`` targets of waves up to ``wave`` that may start,
    with whether a workload holds each (the kind's ``busy``): one
    query."""
    startable = (states.TARGET_PENDING, states.SKIPPED_BUSY) \
        if retry_skipped else (states.TARGET_PENDING,)
    busy = KINDS[kind].busy(image).label('busy')
    with api.reader() as session:
        # Free ones first: regions waited for never hold back the others.
        return session.execute(
            sa.select(RT.id, RT.hostname, RT.state, busy)
            .where(RT.rollout_id == rollout_id, RT.wave <= wave,
                   RT.state.in_(startable))
            .order_by(RT.wave, busy, RT.state, RT.id).limit(limit)).all()


@api.retry_on_deadlock
def skip_busy(ids, reason):
    """Targets a workload holds: skipped (retried while the rollout
    runs)."""
    if not ids:
        return 0
    with api.writer() as session:
        return session.execute(_moved(
            states.SKIP_BUSY, RT.id.in_(ids), reason=reason)).rowcount


def _owned(rollout_id, conductor_uuid, rollout_states):
    return sa.select(RO.id).where(
        RO.id == rollout_id, RO.conductor_uuid == conductor_uuid,
        RO.state.in_(rollout_states)).exists()


@api.retry_on_deadlock
def begin(target_id, kind, image, project_id, conductor_uuid, now,
          force=False, options=None):
    """Start the change of one target: in one transaction, the target's
    conditional update to in_progress (only while this conductor owns the
    running rollout), its last-known-good, and the kind's operation.
    Answers the agent's job and the operation, or None when the target
    was taken or stopped meanwhile; raises Conflict when the target cannot
    be changed now (it is then left as it was)."""
    kind = KINDS[kind]
    with api.writer() as session:
        target = session.get(RT, target_id)
        current = kind.current(session, target, image)
        changed = session.execute(_moved(
            states.BEGIN, RT.id == target_id,
            _owned(target.rollout_id, conductor_uuid,
                   (states.ROLLOUT_RUNNING,)),
            started_at=now, finished_at=None, attempts=RT.attempts + 1,
            **_first_or_again(target, current))).rowcount
        if not changed:
            return None
        job, operation = kind.start(session, target.target_uuid, image,
                                    project_id, conductor_uuid, force=force,
                                    options=options)
        session.execute(sa.update(RT).where(RT.id == target_id).values(
            operation_uuid=operation['uuid'],
            applied=kind.applied(image, job))
            .execution_options(synchronize_session=False))
        return job, operation


def _first_or_again(target, current):
    """What a target's begin records: what it holds now as its
    last-known-good, the first time; begun again after an interruption,
    what it held before the first attempt, and why it is begun again."""
    if target.attempts:
        return {'last_known_good': target.last_known_good,
                'reason': target.reason}
    return {'last_known_good': current, 'reason': None}


@api.retry_on_deadlock
def note(target_id, reason):
    with api.writer() as session:
        session.execute(sa.update(RT).where(RT.id == target_id)
                        .values(reason=reason))


# Rolling back.
def to_revert(rollout_id, limit):
    """Up to ``limit`` changed targets to put back, latest wave first:
    those whose change ran (done, gating, or failed after their operation
    began) and were not reverted yet. One query."""
    with api.reader() as session:
        return session.execute(
            sa.select(RT.id, RT.hostname, RT.last_known_good)
            .where(RT.rollout_id == rollout_id,
                   RT.state.in_(MACHINE.sources(states.REVERT)),
                   RT.operation_uuid.is_not(None),
                   RT.rollback_operation_uuid.is_(None))
            .order_by(RT.wave.desc(), RT.id).limit(limit)).all()


@api.retry_on_deadlock
def begin_revert(target_id, kind, project_id, conductor_uuid, now):
    """As ``begin``, for the rollback of one target to its last-known
    good (the kind's ``restore_image``); one with nothing to restore (a
    region or card that held nothing before: no erase operation exists)
    is only marked rolled back, a host that had no driver of the family
    has it removed."""
    kind = KINDS[kind]
    with api.writer() as session:
        target = session.get(RT, target_id)
        rollout = session.get(RO, target.rollout_id)
        where = (RT.id == target_id, RT.rollback_operation_uuid.is_(None),
                 _owned(target.rollout_id, conductor_uuid,
                        (states.ROLLING_BACK, states.MANUAL_ROLLBACK)))
        image = kind.restore_image(rollout.image, target.last_known_good)
        if image is None:
            session.execute(_moved(
                states.NOTHING_TO_RESTORE, *where, finished_at=now,
                reason=_keep_reason(target, 'Nothing to restore: no image '
                                    'is known to have been on it before.')))
            return None
        changed = session.execute(_moved(
            states.REVERT, *where,
            reason=_keep_reason(target, None))).rowcount
        if not changed:
            return None
        job, operation = kind.start(
            session, target.target_uuid, image, project_id, conductor_uuid,
            force=kind.includes_busy(json.loads(rollout.strategy)),
            options=kind.begin_options(rollout))
        session.execute(sa.update(RT).where(RT.id == target_id).values(
            rollback_operation_uuid=operation['uuid'])
            .execution_options(synchronize_session=False))
        return job, operation


def _keep_reason(target, extra):
    """A target's reason keeps why it failed when it is rolled back."""
    parts = [p for p in (target.reason, extra) if p]
    return ' '.join(parts) or None
