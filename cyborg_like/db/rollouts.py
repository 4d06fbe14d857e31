"""Fleet rollouts: a change carried across many targets in waves
(docs/rollouts.md).

A rollout's targets are resolved once, when it is created, into
``rollout_targets`` by one ``INSERT ... SELECT`` that also numbers their
waves (0 is the canary); the target list never crosses RPC. Each step of
the conductor that owns the rollout (conductor/rollouts.py) is a constant
number of queries whatever the number of targets, plus one transaction per
target it starts: that target's conditional update ``pending ->
in_progress`` and its operation, together, so no target is changed twice
however many conductors step the rollout.
"""

import datetime
import json

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import bitstream_compat
from cyborg_like.db import conductors
from cyborg_like.common import driver_families
from cyborg_like.db import deployables
from cyborg_like.db import driver_operations
from cyborg_like.db import firmware
from cyborg_like.db import hosts
from cyborg_like.db import models
from cyborg_like.db import operations
from cyborg_like.db import placement_sync

RO = models.Rollout
RT = models.RolloutTarget
DEP = models.Deployable
DEV = models.Device
OP = models.Operation
HOST = models.Host

# What a rollout applies, and to what: a bitstream to FPGA regions
# (program operations), firmware to FPGA cards (firmware operations), a
# driver family's version to hosts (driver operations; the rollout's
# ``image`` is ``<family>=<version>``, and a host target's ``target_uuid``
# its hostname: hosts have no uuid).
BITSTREAM, FIRMWARE, DRIVER = 'bitstream', 'firmware', 'driver'
KINDS = (BITSTREAM, FIRMWARE, DRIVER)
TARGET_KINDS = {BITSTREAM: 'deployable', FIRMWARE: 'device', DRIVER: 'host'}
PROGRAMMABLE_TYPES = ('FPGA',)
# What a rollout does with targets a workload holds.
SKIP, WAIT, INCLUDE = 'skip', 'wait', 'include'
INTERRUPTED_AGAIN = ('Its operation was interrupted (its conductor '
                     'stopped); begun again.')
# Driver parameters that name one version's package file: not reused to
# install another version (a rollback's).
DEB_PATH_KEYS = ('deb_path', 'vgpu_manager_deb_path')

DEFAULT_STRATEGY = {
    'canary': 1, 'waves': ['100%'], 'max_unavailable': 1,
    'max_unavailable_per_host': 1, 'gate_seconds': 0, 'failure_budget': 0,
    'workloads': SKIP, 'wait_timeout': 600,
}


# Planning.
def driver_image(family, version):
    return '%s=%s' % (family, version)


def driver_of(image):
    """(family, version) of a driver rollout's ``image``."""
    family, _sep, version = image.partition('=')
    return family, version


def _installed(family, version):
    """The host's record says ``version`` of ``family`` is installed
    (driver_versions is JSON written with sort_keys; db/driver_operations)
    -- or, with ``version`` None, that none is."""
    if version is None:
        return sa.or_(HOST.driver_versions.is_(None),
                      ~HOST.driver_versions.contains('"%s": ' % family,
                                                     autoescape=True))
    return HOST.driver_versions.contains(
        json.dumps({family: version}, sort_keys=True)[1:-1], autoescape=True)


def _in_aggregates(uuids):
    """The host is in one of these Placement aggregates, as its last sync
    read them: ``hosts.aggregates`` is a JSON list of canonical UUIDs
    (db/placement_sync.py), so a quoted UUID found in it is one of them;
    plain LIKE, the same on every database."""
    return sa.or_(*(HOST.aggregates.contains(
        '"%s"' % placement_sync.canonical_uuid(uuid), autoescape=True)
        for uuid in uuids))


def _selected_hosts(selector, family):
    """Hosts (driver rollouts): ``hostnames``; ``aggregates``: the host is
    in one of them; ``labels``: the host has all of them; ``vendor``,
    ``model`` and ``device_type``: a device of the host has them;
    ``current_version``: the family's version the host's record holds
    (None: none)."""
    if {'deployable_names', 'current_image'} & set(selector):
        raise exception.Invalid(
            'deployable_names and current_image select regions; a driver '
            'rollout selects hosts.')
    query = sa.select(HOST.id, HOST.hostname.label('uuid'),
                      sa.cast(sa.null(), sa.Integer).label('device_id'),
                      HOST.hostname)
    if selector.get('hostnames'):
        query = query.where(HOST.hostname.in_(selector['hostnames']))
    if selector.get('aggregates'):
        query = query.where(_in_aggregates(selector['aggregates']))
    if selector.get('labels'):
        query = query.where(hosts.labelled(selector['labels']))
    device = [DEV.hostname == HOST.hostname]
    for key, column in (('vendor', DEV.vendor), ('model', DEV.model),
                        ('device_type', DEV.type)):
        if selector.get(key):
            device.append(column == selector[key])
    if len(device) > 1:
        query = query.where(sa.exists().where(*device))
    if 'current_version' in selector:
        query = query.where(_installed(family, selector['current_version']))
    return query


def _selected(kind, selector, image=None):
    """The targets ``selector`` names: (id, uuid, device id, hostname) of
    FPGA regions (bitstream), FPGA cards (firmware) or hosts (driver)."""
    if kind != DRIVER and {'device_type', 'current_version'} & set(
            selector):
        raise exception.Invalid('device_type and current_version select '
                                'hosts of a driver rollout.')
    if kind == DRIVER:
        return _selected_hosts(selector, driver_of(image)[0])
    if kind == FIRMWARE:
        if {'deployable_names', 'current_image'} & set(selector):
            raise exception.Invalid(
                'deployable_names and current_image select regions; a '
                'firmware rollout selects cards.')
        query = sa.select(DEV.id, DEV.uuid, DEV.id.label('device_id'),
                          DEV.hostname).where(
            DEV.type.in_(firmware.FLASHABLE_TYPES))
    else:
        query = sa.select(DEP.id, DEP.uuid, DEV.id.label('device_id'),
                          DEV.hostname).join(
            DEV, DEP.device_id == DEV.id).where(
            DEV.type.in_(PROGRAMMABLE_TYPES), DEP.parent_id.is_(None))
    if selector.get('hostnames'):
        query = query.where(DEV.hostname.in_(selector['hostnames']))
    if selector.get('aggregates'):
        # Of the hosts in one of them: a subquery of the same statement.
        query = query.where(DEV.hostname.in_(
            sa.select(HOST.hostname).where(
                _in_aggregates(selector['aggregates']))))
    if selector.get('labels'):
        query = query.where(DEV.hostname.in_(
            sa.select(HOST.hostname).where(
                hosts.labelled(selector['labels']))))
    for key in ('vendor', 'model'):
        if selector.get(key):
            query = query.where(getattr(DEV, key) == selector[key])
    if selector.get('deployable_names'):
        query = query.where(DEP.name.in_(selector['deployable_names']))
    if 'current_image' in selector:
        query = query.where(DEP.bitstream_id == selector['current_image']
                            if selector['current_image'] is not None
                            else DEP.bitstream_id.is_(None))
    return query


def _size(value, total):
    """A count, or ``"N%"`` of ``total`` (rounded up, at least 1)."""
    if isinstance(value, str) and value.endswith('%'):
        percent = float(value[:-1])
        return max(1, -(-int(total * percent) // 100)) if percent else 0
    return int(value)


def resolve(strategy, total):
    """The strategy with its defaults and sizes counted for ``total``
    targets: ``canary`` and ``wave_sizes`` (the last repeats)."""
    strategy = dict(DEFAULT_STRATEGY, **strategy)
    sizes = [max(1, _size(w, total)) for w in strategy['waves']]
    resolved = dict(strategy, canary=min(total, _size(strategy['canary'],
                                                       total)),
                    wave_sizes=sizes,
                    max_unavailable=max(1, _size(strategy['max_unavailable'],
                                                 total)))
    resolved['waves_total'] = waves_total(resolved, total)
    return resolved


def waves_total(strategy, total):
    """How many waves after the canary ``total`` targets make."""
    left, waves = total - strategy['canary'], 0
    sizes = strategy['wave_sizes']
    for size in sizes[:-1]:
        if left <= 0:
            return waves
        left -= size
        waves += 1
    return waves + max(0, -(-left // sizes[-1]))


def _numbered(kind, selector, strategy, image):
    """The selected targets with their wave: numbered in (host, region)
    order, the first ``canary`` in wave 0, then the wave sizes in turn,
    the last size repeating (computed in SQL, so planning is one query
    whatever the fleet)."""
    order = {FIRMWARE: (DEV.hostname, DEV.id), DRIVER: (HOST.hostname,),
             BITSTREAM: (DEV.hostname, DEP.id)}[kind]
    chosen = _selected(kind, selector, image).add_columns(
        (sa.func.row_number().over(order_by=order) - 1)
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


def plan(kind, image, selector, strategy):
    """A dry run: the waves the rollout would have, nothing written."""
    _check_workloads(kind, strategy or {})
    with api.reader() as session:
        _check_image(session, kind, image)
        total = session.scalar(sa.select(sa.func.count()).select_from(
            _selected(kind, selector, image).subquery()))
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


def create(values, project_id, conductor_uuid, now):
    """A running rollout owned by ``conductor_uuid``, its targets resolved
    and numbered into waves in one INSERT ... SELECT."""
    selector, kind = values.get('selector') or {}, values['kind']
    _check_workloads(kind, values.get('strategy') or {})
    with api.writer() as session:
        _check_image(session, kind, values['image'])
        total = session.scalar(sa.select(sa.func.count()).select_from(
            _selected(kind, selector, values['image']).subquery()))
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
            sa.select(sa.literal(rollout.id), sa.literal(TARGET_KINDS[kind]),
                      chosen.c.uuid, chosen.c.device_id, chosen.c.hostname,
                      wave, sa.literal(states.TARGET_PENDING))))
        return _view(session, rollout)


def _dumped(options):
    return json.dumps(options, sort_keys=True) if options else None


def _check_workloads(kind, strategy):
    if strategy.get('workloads') == INCLUDE and kind != DRIVER:
        raise exception.Invalid(
            'workloads include is for driver rollouts only: programming a '
            'region or flashing a card a workload holds is refused.')


def _check_image(session, kind, image):
    """A bitstream's catalog image must be an active bitstream (each
    region's fit is checked when its turn comes; other ids name files of
    the agents' bitstream_dir, which nothing here can check); firmware
    must be an active firmware image of the catalog (each card's vendor
    and board are checked when its turn comes)."""
    if kind == FIRMWARE:
        firmware.firmware_image(session, image)
        return
    if kind == DRIVER:
        if driver_of(image)[0] not in driver_families.FAMILIES:
            raise exception.Invalid('Unknown driver family in %s.' % image)
        return
    found = bitstream_compat.catalog_image(session, image)
    if found is not None and found.kind == 'firmware':
        raise exception.IncompatibleImage(
            'Image %s is firmware, not a bitstream for regions.' % found.uuid)


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
    found = _plain_view(rollout, counts)
    if rollout.kind == DRIVER:
        found['driver'], found['version'] = driver_of(rollout.image)
        found.update(_options(rollout))
    return found


def _options(rollout):
    """A driver rollout's ``parameters`` and ``timeout``."""
    return dict({'parameters': {}, 'timeout': None},
                **json.loads(rollout.operation_options or '{}'))


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
            _cut_short(session, RT.rollout_id == rollout.id, now)
        session.refresh(rollout)
        return _view(session, rollout)


CUT_SHORT_REASON = 'Its gate was cut short: the rollout was aborted.'


def _cut_short(session, which, now):
    """Gating targets of an aborted rollout: changed, never verified (no
    conductor drives an aborted rollout's gates)."""
    machine = states.ROLLOUT_TARGET
    return session.execute(
        sa.update(RT).where(
            which, RT.state.in_(machine.sources(states.CUT_SHORT)))
        .values(state=machine.target(states.CUT_SHORT),
                reason=CUT_SHORT_REASON, finished_at=now)
        .execution_options(synchronize_session=False)).rowcount


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


def sync_operations(now, retries=0):
    """Targets whose operation ended move on (for every rollout, whatever
    its state: an aborted rollout's last operations are recorded too, and
    its targets left gating marked unverified): six conditional updates.
    First, a target whose operation its conductor's death interrupted is
    begun again, up to ``retries`` times (never a card's firmware flash:
    the card may hold half an image and stays drained for an operator;
    db/operations.py keep_drained)."""
    machine = states.ROLLOUT_TARGET
    ended = {}
    with api.writer() as session:
        ended[(states.IN_PROGRESS, states.RETRY)] = session.execute(
            sa.update(RT).where(
                RT.state == states.IN_PROGRESS,
                RT.state.in_(machine.sources(states.RETRY)),
                RT.target_kind != TARGET_KINDS[FIRMWARE],
                RT.attempts <= retries,
                RT.operation_uuid.in_(sa.select(OP.uuid).where(
                    OP.state == states.FAILED,
                    OP.detail == operations.INTERRUPTED)))
            .values(state=machine.target(states.RETRY),
                    reason=INTERRUPTED_AGAIN)
            .execution_options(synchronize_session=False)).rowcount
        for column, source, ok_event in (
                (RT.operation_uuid, states.IN_PROGRESS, states.FINISH),
                (RT.rollback_operation_uuid, states.TARGET_ROLLING_BACK,
                 states.REVERTED)):
            detail = sa.select(OP.detail).where(
                OP.uuid == column).scalar_subquery()
            for op_states, event in (((states.SUCCEEDED,), ok_event),
                                     ((states.FAILED, states.CANCELLED),
                                      states.FAIL)):
                values = {'state': machine.target(event),
                          'finished_at': now}
                if event == states.FAIL:
                    values['reason'] = (
                        sa.literal('Rollback failed: ') + detail
                        if source == states.TARGET_ROLLING_BACK else detail)
                result = session.execute(
                    sa.update(RT).where(
                        RT.state == source,
                        RT.state.in_(machine.sources(event)),
                        column.in_(sa.select(OP.uuid).where(
                            OP.state.in_(op_states))))
                    .values(**values)
                    .execution_options(synchronize_session=False))
                ended[(source, event)] = result.rowcount
        # An operation that ended after its rollout's abort: its target
        # reached gating above, where no gate will run.
        ended[(states.GATING, states.CUT_SHORT)] = _cut_short(
            session, RT.rollout_id.in_(sa.select(RO.id).where(
                RO.state == states.ROLLOUT_ABORTED)), now)
    return ended


def _unhealthy_since():
    """Targets whose device read unhealthy after the change ended."""
    return sa.exists().where(
        models.DeviceMetric.device_id == RT.device_id,
        models.DeviceMetric.healthy.is_(False),
        models.DeviceMetric.recorded_at >= RT.finished_at)


def _family_devices(family):
    """The devices a host target's driver family drives on its host."""
    return (DEV.hostname == RT.hostname,
            sa.func.lower(DEV.vendor).in_(driver_families.vendors(family)))


def _host_unwell(family):
    """A device of the family on the target's host is unhealthy, out of
    service or drained, or read unhealthy since the change ended."""
    return sa.or_(
        sa.exists().where(*_family_devices(family), sa.or_(
            DEV.health == 'unhealthy', DEV.service_state != states.SERVING,
            DEV.drained_by.is_not(None))),
        sa.exists().where(
            *_family_devices(family),
            models.DeviceMetric.device_id == DEV.id,
            models.DeviceMetric.healthy.is_(False),
            models.DeviceMetric.recorded_at >= RT.finished_at))


def gate(rollout_id, gate_seconds, now, image=None):
    """The health gate of the rollout's changed targets: failed at once
    when their device (a host's: any of the driver family's) turned
    unhealthy or left service, or the region (host) does not read back
    what was applied; passed once they stayed well for ``gate_seconds``.
    Three updates. ``image``: a driver rollout's."""
    device = sa.select(DEV.id).where(sa.or_(
        DEV.health == 'unhealthy',
        DEV.service_state != states.SERVING))
    # A region reads back its bitstream; a card's firmware was read back
    # by its agent after the flash (the operation's result); a host's
    # record holds the version the driver operation's playbook reported
    # installed (its result's version_after).
    readback = sa.and_(RT.target_kind == 'deployable', ~sa.select(
        DEP.uuid).where(DEP.uuid == RT.target_uuid,
                        DEP.bitstream_id == RT.applied).exists())
    unwell = RT.device_id.in_(device)
    if image is not None:
        family = driver_of(image)[0]
        readback = sa.and_(RT.target_kind == 'host', ~sa.exists().where(
            HOST.hostname == RT.hostname, HOST.driver_versions.contains(
                sa.literal('"%s": "' % family) + RT.applied + '"')))
        unwell = _host_unwell(family)
    gating = (RT.rollout_id == rollout_id, RT.state == states.GATING)
    with api.writer() as session:
        sick = session.execute(
            sa.update(RT).where(*gating, sa.or_(
                unwell, _unhealthy_since()))
            .values(state=states.TARGET_FAILED, reason=(
                'Health gate: the device turned unhealthy or left service '
                'after the change.'))
            .execution_options(synchronize_session=False)).rowcount
        wrong = session.execute(
            sa.update(RT).where(*gating, readback)
            .values(state=states.TARGET_FAILED, reason=(
                'Health gate: the %s does not read back the %s applied.'
                % (('host', 'driver version') if image else
                   ('region', 'image'))))
            .execution_options(synchronize_session=False)).rowcount
        passed = session.execute(
            sa.update(RT).where(
                *gating, RT.finished_at <= now - datetime.timedelta(
                    seconds=gate_seconds))
            .values(state=states.DONE)
            .execution_options(synchronize_session=False)).rowcount
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


def _busy(image=None):
    """A workload holds the target (a handle of the region, or of any
    region of the card, or of any device of the driver family on the
    host, bound, binding or being released)."""
    if image is not None:
        return sa.exists().where(
            models.AttachHandle.deployable_id == DEP.id,
            DEP.device_id == DEV.id, *_family_devices(driver_of(image)[0]),
            sa.or_(models.AttachHandle.in_use.is_(True),
                   models.AttachHandle.release_pending.is_(True)))
    return sa.exists().where(
        models.AttachHandle.deployable_id == DEP.id,
        DEP.device_id == RT.device_id,
        sa.or_(RT.target_kind == 'device', DEP.uuid == RT.target_uuid),
        sa.or_(models.AttachHandle.in_use.is_(True),
               models.AttachHandle.release_pending.is_(True)))


def candidates(rollout_id, wave, limit, retry_skipped, image=None):
    """Up to ``limit`` targets of waves up to ``wave`` that may start,
    with whether a workload holds each: one query. ``image``: a driver
    rollout's (its targets are hosts)."""
    startable = (states.TARGET_PENDING, states.SKIPPED_BUSY) \
        if retry_skipped else (states.TARGET_PENDING,)
    busy = _busy(image).label('busy')
    with api.reader() as session:
        # Free ones first: regions waited for never hold back the others.
        return session.execute(
            sa.select(RT.id, RT.hostname, RT.state, busy)
            .where(RT.rollout_id == rollout_id, RT.wave <= wave,
                   RT.state.in_(startable))
            .order_by(RT.wave, busy, RT.state, RT.id).limit(limit)).all()


def skip_busy(ids, reason):
    """Targets a workload holds: skipped (retried while the rollout
    runs)."""
    if not ids:
        return 0
    with api.writer() as session:
        return session.execute(
            sa.update(RT).where(
                RT.id.in_(ids),
                RT.state.in_(states.ROLLOUT_TARGET.sources(
                    states.SKIP_BUSY)))
            .values(state=states.SKIPPED_BUSY, reason=reason)
            .execution_options(synchronize_session=False)).rowcount


def _owned(rollout_id, conductor_uuid, rollout_states):
    return sa.select(RO.id).where(
        RO.id == rollout_id, RO.conductor_uuid == conductor_uuid,
        RO.state.in_(rollout_states)).exists()


def begin(target_id, kind, image, project_id, conductor_uuid, now,
          force=False, options=None):
    """Start the change of one target: in one transaction, the target's
    conditional update to in_progress (only while this conductor owns the
    running rollout), its last-known-good, and the program operation.
    Answers the agent's job and the operation, or None when the target
    was taken or stopped meanwhile; raises Conflict when the region cannot
    be programmed now (it is then left as it was)."""
    machine = states.ROLLOUT_TARGET
    with api.writer() as session:
        target = session.get(RT, target_id)
        if kind == FIRMWARE:
            current = firmware.last_flashed(session, target.target_uuid)
        elif kind == DRIVER:
            current = _host_version(session, target.hostname,
                                    driver_of(image)[0])
        else:
            current = _restorable(session, session.scalar(
                sa.select(DEP.bitstream_id).where(
                    DEP.uuid == target.target_uuid)))
        changed = session.execute(
            sa.update(RT).where(
                RT.id == target_id,
                RT.state.in_(machine.sources(states.BEGIN)),
                _owned(target.rollout_id, conductor_uuid,
                       (states.ROLLOUT_RUNNING,)))
            .values(state=machine.target(states.BEGIN), started_at=now,
                    finished_at=None, attempts=RT.attempts + 1,
                    **_first_or_again(target, current))
            .execution_options(synchronize_session=False)).rowcount
        if not changed:
            return None
        job, operation = _start(session, kind, target.target_uuid, image,
                                project_id, conductor_uuid, force=force,
                                options=options)
        session.execute(sa.update(RT).where(RT.id == target_id).values(
            operation_uuid=operation['uuid'],
            applied={FIRMWARE: image, DRIVER: driver_of(image)[1]}.get(
                kind) or job['bitstream_id'])
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


def includes_busy(kind, strategy):
    """Whether a rollout changes targets a workload holds: only driver
    rollouts with ``workloads: include`` (their operations are forced;
    programming and flashing refuse a busy region or card whatever asks).
    """
    return kind == DRIVER and strategy.get('workloads') == INCLUDE


def _start(session, kind, target_uuid, image, project_id, conductor_uuid,
           force=False, options=None):
    """The existing operation that applies ``image`` to the target, within
    the caller's transaction: (agent job, operation); ``force``: a driver
    operation over the workloads that hold the host's devices;
    ``options``: a driver rollout's parameters and timeout."""
    if kind == FIRMWARE:
        job, operation, _device = firmware.flash_in(
            session, target_uuid, image, project_id, conductor_uuid)
    elif kind == DRIVER:
        operation, job = driver_operations.start_in(
            session, target_uuid, _driver_request(session, target_uuid,
                                                  image, force, options),
            project_id, conductor_uuid)
    else:
        job, operation, _dep = deployables.program_in(
            session, target_uuid, image, project_id, conductor_uuid)
    return job, operation


def _host_version(session, hostname, family):
    text = session.scalar(sa.select(HOST.driver_versions).where(
        HOST.hostname == hostname))
    return (json.loads(text) if text else {}).get(family)


def _driver_request(session, hostname, image, force=False, options=None):
    """The driver operation that puts ``image`` (``<family>=<version>``,
    or ``<family>=``: none) on the host: install when the host's record
    has no version of the family, upgrade over one, remove for none.
    Never waiting; forced only for ``workloads: include``, else a host a
    workload holds is refused, as by the API (the rollout skips or waits
    for it). ``options``: the rollout's ``parameters`` (for an install or
    upgrade to another version than the rollout's, a rollback's, those
    that name one version's file are left out: DEB_PATH_KEYS) and
    ``timeout``."""
    family, version = driver_of(image)
    options = options or {}
    extra = {'force': True} if force else {}
    if options.get('timeout'):
        extra['timeout'] = options['timeout']
    if not version:
        return dict(extra, family=family, action=driver_families.REMOVE,
                    parameters={})
    parameters = dict(options.get('parameters') or {})
    if version != options.get('version'):
        for key in DEB_PATH_KEYS:
            parameters.pop(key, None)
    action = driver_families.UPGRADE if _host_version(
        session, hostname, family) else driver_families.INSTALL
    return dict(extra, family=family, action=action,
                parameters=dict(parameters, version=version))


def _restorable(session, current):
    """What to program to put ``current`` back: the catalog image whose
    uuid or loaded id it is, else the id itself (a file agents know)."""
    if current is None:
        return None
    image = session.scalar(sa.select(models.Bitstream.uuid).where(
        models.Bitstream.status == states.ACTIVE,
        sa.or_(models.Bitstream.uuid == current,
               models.Bitstream.hardware_id == current)).limit(1))
    return image or current


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
                   RT.state.in_(states.ROLLOUT_TARGET.sources(
                       states.REVERT)),
                   RT.operation_uuid.is_not(None),
                   RT.rollback_operation_uuid.is_(None))
            .order_by(RT.wave.desc(), RT.id).limit(limit)).all()


def begin_revert(target_id, kind, project_id, conductor_uuid, now):
    """As ``begin``, for the rollback of one target to its last-known
    good; a region or card that held nothing before is only marked
    rolled back (nothing to program: no erase operation exists), a host
    that had no driver of the family has it removed."""
    machine = states.ROLLOUT_TARGET
    with api.writer() as session:
        target = session.get(RT, target_id)
        owned = _owned(target.rollout_id, conductor_uuid,
                       (states.ROLLING_BACK, states.MANUAL_ROLLBACK))
        where = (RT.id == target_id,
                 RT.state.in_(machine.sources(states.REVERT)),
                 RT.rollback_operation_uuid.is_(None), owned)
        rollout = session.get(RO, target.rollout_id)
        if target.last_known_good is None and kind != DRIVER:
            session.execute(sa.update(RT).where(*where).values(
                state=states.TARGET_ROLLED_BACK, finished_at=now,
                reason=_keep_reason(target, 'Nothing to restore: no image '
                                    'is known to have been on it before.'))
                .execution_options(synchronize_session=False))
            return None
        changed = session.execute(
            sa.update(RT).where(*where).values(
                state=machine.target(states.REVERT),
                reason=_keep_reason(target, None))
            .execution_options(synchronize_session=False)).rowcount
        if not changed:
            return None
        image = target.last_known_good
        if kind == DRIVER:
            # The host's version before, or no driver: remove it.
            image = driver_image(driver_of(rollout.image)[0],
                                 target.last_known_good or '')
        job, operation = _start(session, kind, target.target_uuid, image,
                                project_id, conductor_uuid,
                                force=includes_busy(
                                    kind, json.loads(rollout.strategy)),
                                options=_begin_options(rollout))
        session.execute(sa.update(RT).where(RT.id == target_id).values(
            rollback_operation_uuid=operation['uuid'])
            .execution_options(synchronize_session=False))
        return job, operation


def _keep_reason(target, extra):
    """A target's reason keeps why it failed when it is rolled back."""
    parts = [p for p in (target.reason, extra) if p]
    return ' '.join(parts) or None


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
                'options': _begin_options(rollout)}


def _begin_options(rollout):
    """What ``begin`` passes on to a driver target's operation: the
    rollout's options and its version (to tell a rollback's version)."""
    if rollout.kind != DRIVER:
        return None
    return dict(_options(rollout), version=driver_of(rollout.image)[1])


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
