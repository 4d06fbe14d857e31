"""Fleet rollouts: a change carried across many targets in waves
(docs/rollouts.md).

A rollout's targets are resolved once, when it is created, into
``rollout_targets`` by one ``INSERT ... SELECT`` that also numbers their
waves (0 is the canary); the target list never crosses RPC. What differs
per kind of rollout is asked of db/rollout_kinds.py; the targets' own
queries and conditional updates are db/rollout_targets.py; the strategy's
rules (defaults, wave sizes) are the conductor's, handed in as
``resolve`` (conductor/rollout_strategy.py).
"""

import json

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import conductors
from cyborg_like.db import models
from cyborg_like.db import rollout_kinds
from cyborg_like.db import rollout_targets

RO = models.Rollout
RT = models.RolloutTarget
OP = models.Operation
KINDS = rollout_kinds.KINDS


# Planning.
def _selected(kind, selector, image):
    """The targets ``selector`` names: (id, uuid, device id, hostname)."""
    return KINDS[kind].selected(selector, image)


def _numbered(kind, selector, strategy, image):
    """The selected targets with their wave: numbered in (host, target)
    order, the first ``canary`` in wave 0, then the wave sizes in turn,
    the last size repeating (computed in SQL, so planning is one query
    whatever the fleet)."""
    chosen = _selected(kind, selector, image).add_columns(
        (sa.func.row_number().over(order_by=KINDS[kind].order) - 1)
        .label('r')).subquery()
    r = chosen.c.r
    bound, cases = strategy['canary'], [(r < strategy['canary'], 0)]
    sizes = strategy['wave_sizes']
    for number, size in enumerate(sizes[:-1], start=1):
        bound += size
        cases.append((r < bound, number))
    last = sizes[-1]
    # Exact integer division on every database: (x - x % n) / n.
    rest = r - bound
    wave = sa.case(*cases, else_=len(sizes) + (rest - rest % last) / last)
    return chosen, sa.cast(wave, sa.Integer)


def _total(session, kind, selector, image):
    return session.scalar(sa.select(sa.func.count()).select_from(
        _selected(kind, selector, image).subquery()))


def plan(kind, image, selector, strategy, resolve):
    """A dry run: the waves the rollout would have, nothing written.
    ``resolve(strategy, total)``: the strategy counted for the targets."""
    _check(kind, strategy or {})
    with api.reader() as session:
        KINDS[kind].check_image(session, image)
        total = _total(session, kind, selector, image)
        resolved = resolve(strategy, total)
        chosen, wave = _numbered(kind, selector, resolved, image)
        numbered = sa.select(wave.label('wave'), chosen.c.hostname).subquery()
        rows = session.execute(
            sa.select(numbered.c.wave, sa.func.count(),
                      sa.func.count(sa.distinct(numbered.c.hostname)),
                      sa.func.min(numbered.c.hostname),
                      sa.func.max(numbered.c.hostname))
            .group_by(numbered.c.wave).order_by(numbered.c.wave)).all()
    return {'targets': total, 'strategy': resolved,
            'waves': [{'wave': w, 'targets': n, 'hosts': h,
                       'first_host': first, 'last_host': last}
                      for w, n, h, first, last in rows]}


@api.retry_on_deadlock
def create(values, project_id, conductor_uuid, now, resolve):
    """A running rollout owned by ``conductor_uuid``, its targets resolved
    and numbered into waves in one INSERT ... SELECT (``resolve``: as for
    ``plan``)."""
    selector, kind = values.get('selector') or {}, values['kind']
    _check(kind, values.get('strategy') or {})
    with api.writer() as session:
        KINDS[kind].check_image(session, values['image'])
        total = _total(session, kind, selector, values['image'])
        if not total:
            raise exception.Invalid('The selector matches no target.')
        resolved = resolve(values.get('strategy') or {}, total)
        rollout = RO(uuid=uuidutils.generate_uuid(), name=values.get('name'),
                     kind=values['kind'], image=values['image'],
                     selector=json.dumps(selector, sort_keys=True),
                     strategy=json.dumps(resolved, sort_keys=True),
                     operation_options=_dumped(values.get('options')),
                     state=states.ROLLOUT_RUNNING,
                     conductor_uuid=conductor_uuid, current_wave=0,
                     wave_started_at=now, waves=resolved['waves_total'],
                     project_id=project_id)
        session.add(rollout)
        session.flush()
        chosen, wave = _numbered(kind, selector, resolved, values['image'])
        session.execute(sa.insert(RT).from_select(
            ['rollout_id', 'target_kind', 'target_uuid', 'device_id',
             'hostname', 'wave', 'state'],
            sa.select(sa.literal(rollout.id),
                      sa.literal(KINDS[kind].target_kind),
                      chosen.c.uuid, chosen.c.device_id, chosen.c.hostname,
                      wave, sa.literal(states.TARGET_PENDING))))
        return _view(session, rollout)


def _dumped(options):
    return json.dumps(options, sort_keys=True) if options else None


def _check(kind, strategy):
    if not KINDS[kind].allows_workloads(strategy.get('workloads')):
        raise exception.Invalid(
            'workloads include is for driver rollouts only: programming a '
            'region or flashing a card a workload holds is refused.')


# Reading.
def _counts(session, rollout_ids):
    """{rollout id: {state: count}} in one query."""
    found = {}
    if rollout_ids:
        for rid, state, count in session.execute(
                sa.select(RT.rollout_id, RT.state, sa.func.count())
                .where(RT.rollout_id.in_(rollout_ids))
                .group_by(RT.rollout_id, RT.state)):
            found.setdefault(rid, {})[state] = count
    return found


def _view(session, rollout, counts=None):
    if counts is None:
        counts = _counts(session, [rollout.id]).get(rollout.id, {})
    return dict(_plain_view(rollout, counts),
                **KINDS[rollout.kind].view(rollout))


def _plain_view(rollout, counts):
    return {
        'uuid': rollout.uuid, 'name': rollout.name, 'kind': rollout.kind,
        'image': rollout.image, 'selector': json.loads(rollout.selector),
        'strategy': json.loads(rollout.strategy), 'state': rollout.state,
        'conductor_uuid': rollout.conductor_uuid,
        'current_wave': rollout.current_wave, 'waves': rollout.waves,
        'reason': rollout.reason, 'project_id': rollout.project_id,
        'targets': dict(counts, total=sum(counts.values())),
        'created_at': api.isotime(rollout.created_at),
        'updated_at': api.isotime(rollout.updated_at),
        'finished_at': api.isotime(rollout.finished_at),
    }


def _get(session, uuid):
    rollout = session.scalars(sa.select(RO).where(RO.uuid == uuid)).first()
    if rollout is None:
        raise exception.NotFound('Rollout %s could not be found.' % uuid)
    return rollout


def get(uuid):
    with api.reader() as session:
        return _view(session, _get(session, uuid))


def list_rollouts(filters, limit, marker=None, sort_key='created_at',
                  sort_dir='asc'):
    query = sa.select(RO)
    for name in ('state', 'kind'):
        if filters.get(name):
            query = query.where(getattr(RO, name) == filters[name])
    with api.reader() as session:
        page = session.scalars(api.paginate(
            session, query, RO, limit, marker, sort_key, sort_dir)).all()
        counts = _counts(session, [r.id for r in page])
        return [_view(session, r, counts.get(r.id, {})) for r in page]


def list_targets(uuid, filters, limit, marker=None):
    """A page of the rollout's targets in (wave, id) order; ``marker``:
    the ``id`` of the last target of the previous page."""
    with api.reader() as session:
        rollout = _get(session, uuid)
        query = sa.select(RT).where(RT.rollout_id == rollout.id)
        for name in ('state', 'wave', 'hostname'):
            if filters.get(name) is not None:
                query = query.where(getattr(RT, name) == filters[name])
        if marker is not None:
            after = session.scalars(sa.select(RT).where(
                RT.rollout_id == rollout.id, RT.id == marker)).first()
            if after is None:
                raise exception.MarkerNotFound(marker=marker)
            query = query.where(sa.or_(
                RT.wave > after.wave,
                sa.and_(RT.wave == after.wave, RT.id > after.id)))
        return [target_dict(t) for t in session.scalars(
            query.order_by(RT.wave, RT.id).limit(limit))]


def target_dict(target):
    return {
        'id': target.id, 'target_kind': target.target_kind,
        'target_uuid': target.target_uuid, 'hostname': target.hostname,
        'wave': target.wave, 'state': target.state,
        'last_known_good': target.last_known_good,
        'applied': target.applied,
        'operation_uuid': target.operation_uuid,
        'rollback_operation_uuid': target.rollback_operation_uuid,
        'started_at': api.isotime(target.started_at),
        'finished_at': api.isotime(target.finished_at),
        'reason': target.reason, 'attempts': target.attempts,
    }


# Moving the rollout.
# ``apply``'s reason when the event says nothing of it.
KEEP_REASON = object()


@api.retry_on_deadlock
def apply(uuid, event, reason=KEEP_REASON, now=None, rollout_id=None):
    """Apply ``event`` of ``states.ROLLOUT``, only from the states it
    allows (a conditional update); the rollout after it, or Conflict
    naming the states it needs. ``reason`` replaces the rollout's (None
    clears it: a resumed rollout is no longer "Paused by an operator")."""
    machine = states.ROLLOUT
    values = {'state': machine.target(event)}
    if reason is not KEEP_REASON:
        values['reason'] = reason
    if machine.target(event) in states.ROLLOUT_ENDED:
        values['finished_at'] = now
    with api.writer() as session:
        rollout = _get(session, uuid) if rollout_id is None else \
            session.get(RO, rollout_id)
        changed = session.execute(
            sa.update(RO).where(RO.id == rollout.id,
                                RO.state.in_(machine.sources(event)))
            .values(**values)).rowcount
        if not changed:
            raise exception.Conflict(
                'Rollout %s is %s; %s needs it %s.' % (
                    rollout.uuid, rollout.state, event,
                    ' or '.join(machine.sources(event))))
        if event == states.ABORT:
            rollout_targets.cut_short(session, RT.rollout_id == rollout.id,
                                      now)
        session.refresh(rollout)
        return _view(session, rollout)


@api.retry_on_deadlock
def claim(conductor_uuid, down_after):
    """Take over the rollouts under way whose owner stopped heartbeating
    (one conditional update: one conductor wins each); answer the ids and
    uuids of those this conductor owns now."""
    with api.writer() as session:
        session.execute(
            sa.update(RO).where(
                RO.state.in_(states.ROLLOUT_ACTIVE),
                sa.or_(RO.conductor_uuid.is_(None),
                       RO.conductor_uuid.notin_(
                           conductors.alive(down_after))))
            .values(conductor_uuid=conductor_uuid)
            .execution_options(synchronize_session=False))
    with api.reader() as session:
        return session.execute(sa.select(RO.id, RO.uuid).where(
            RO.conductor_uuid == conductor_uuid,
            RO.state.in_(states.ROLLOUT_ACTIVE))).all()


@api.retry_on_deadlock
def advance(rollout_id, wave, now):
    with api.writer() as session:
        session.execute(sa.update(RO).where(RO.id == rollout_id,
                                            RO.current_wave == wave - 1)
                        .values(current_wave=wave, wave_started_at=now))


def load(rollout_id):
    with api.reader() as session:
        rollout = session.get(RO, rollout_id)
        return {'id': rollout.id, 'uuid': rollout.uuid,
                'kind': rollout.kind,
                'state': rollout.state, 'image': rollout.image,
                'strategy': json.loads(rollout.strategy),
                'current_wave': rollout.current_wave,
                'wave_started_at': rollout.wave_started_at,
                'waves': rollout.waves, 'project_id': rollout.project_id,
                'options': rollout_kinds.KINDS[
                    rollout.kind].begin_options(rollout)}


def ended_operations(rollout_uuid):
    """(operation uuid, created_at, updated_at) of every operation the
    rollout started, for checking bounds (tests, the benchmark)."""
    with api.reader() as session:
        rollout = _get(session, rollout_uuid)
        ops = sa.union(
            sa.select(RT.operation_uuid.label('uuid')).where(
                RT.rollout_id == rollout.id),
            sa.select(RT.rollback_operation_uuid).where(
                RT.rollout_id == rollout.id)).subquery()
        return session.execute(
            sa.select(OP.uuid, OP.target_uuid, OP.created_at, OP.updated_at)
            .where(OP.uuid.in_(sa.select(ops.c.uuid)))).all()
