"""Rollouts at the database layer (db/rollouts.py) and one conductor step
(conductor/rollouts.py) over a fleet made by the real inventory reconcile:
the planner's waves, the declared state machines as the database applies
them (every illegal transition refused, changing nothing), a target begun
once only and only by the rollout's owner, takeover of a silent owner's
rollouts by exactly one conductor, and a step costing the same number of
queries for 40 regions as for 400."""

import datetime
import functools
import itertools

import pytest
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import inventory as wire
from cyborg_like.common import states
from cyborg_like.conductor import rollout_strategy
from cyborg_like.conductor import rollouts as conductor_rollouts
from cyborg_like.conductor import workqueue
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import conductors
from cyborg_like.db import inventory
from cyborg_like.db import models
from cyborg_like.db import placement_sync
from cyborg_like.db import rollout_kinds
from cyborg_like.db import rollout_targets
from cyborg_like.db import rollouts
from tests.unit.test_db_inventory import count_queries

ME = '00000000-0000-4000-8000-00000000c0d1'
OTHER = '00000000-0000-4000-8000-00000000c0d2'
NOW = datetime.datetime(2026, 11, 26, 4, 0, 0)
# The database plans with the conductor's strategy rule, handed in.
_plan = functools.partial(rollouts.plan, resolve=rollout_strategy.resolve)
_db_create = functools.partial(rollouts.create,
                               resolve=rollout_strategy.resolve)


def _fleet(hosts, regions=2):
    """``hosts`` hosts of one FPGA with ``regions`` regions holding
    bs-old, reported as their agents would."""
    for n in range(hosts):
        inventory.reconcile('host-%04d' % n, [{
            'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC N3000',
            'controlpath_id': {'cpid_type': 'PCI', 'cpid_info':
                               wire.pci_address_info('0000:5e:00.0')},
            'deployables': [{
                'name': 'region%d' % r, 'num_accelerators': 1,
                'driver_name': 'fake', 'bitstream_id': 'bs-old',
                'attributes': {'rc': 'FPGA'},
                'attach_handles': [{
                    'attach_type': 'PCI', 'attach_info':
                    wire.pci_address_info('0000:5e:00.%d' % (r + 1))}]}
                for r in range(regions)]}], 'h%d' % n)


def _create(strategy, owner=ME):
    return _db_create({'kind': 'bitstream', 'image': 'bs-new',
                       'strategy': strategy}, 'p1', owner, NOW)


def _targets(uuid):
    return rollouts.list_targets(uuid, {}, 100000)


def test_waves_counts_and_percentages(migrated_db):
    _fleet(10)      # 20 regions
    plan = _plan('bitstream', 'bs-new', {},
                 {'canary': '5%', 'waves': [3, '50%']})
    # canary 1 (5% of 20), then 3, then waves of 10 (50%) for the 16 left.
    assert [(w['wave'], w['targets']) for w in plan['waves']] == \
        [(0, 1), (1, 3), (2, 10), (3, 6)]
    assert plan['strategy']['waves_total'] == 3
    rollout = _create({'canary': '5%', 'waves': [3, '50%']})
    assert rollout['waves'] == 3
    waves = [t['wave'] for t in _targets(rollout['uuid'])]
    assert waves == [0] + [1] * 3 + [2] * 10 + [3] * 6
    # In host order: the canary is the first host's first region.
    assert _targets(rollout['uuid'])[0]['hostname'] == 'host-0000'


def test_selector_and_no_target(migrated_db):
    _fleet(3)
    plan = _plan('bitstream', 'bs-new', {'hostnames': ['host-0001'],
                 'deployable_names': ['region1']}, {})
    assert plan['targets'] == 1
    with pytest.raises(exception.Invalid):
        _db_create({'kind': 'bitstream', 'image': 'x', 'selector': {
            'hostnames': ['nowhere']}}, 'p1', ME, NOW)


AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'
FIRMWARE_IMAGE = 'f0000000-0000-4000-8000-0000000000f1'


def _check_plans_of_every_kind(selector, cases):
    """For each (value of ``selector``, hosts expected) of ``cases``, a
    rollout of each kind plans the targets of exactly those hosts (2
    regions, 1 card, or the host itself each) in host order."""
    with db_api.writer() as session:
        session.add(models.Bitstream(
            uuid=FIRMWARE_IMAGE, name='fw', kind='firmware',
            status=states.ACTIVE))
    image = {'bitstream': 'bs-new', 'firmware': FIRMWARE_IMAGE,
             'driver': rollout_kinds.driver_image('opae', '2.0')}
    per_host = {'bitstream': 2, 'firmware': 1, 'driver': 1}
    for kind, (value, expected) in itertools.product(image, cases):
        plan = _plan(kind, image[kind], {selector: value},
                     {'canary': 0, 'waves': [100]})
        assert plan['targets'] == per_host[kind] * len(expected), (kind,
                                                                  value)
        if expected:
            [wave] = plan['waves']
            assert (wave['hosts'], wave['first_host'], wave['last_host']) \
                == (len(expected), expected[0], expected[-1])


def test_selected_by_placement_aggregate_for_every_kind(migrated_db):
    _fleet(5)       # 10 regions on 5 cards on 5 hosts
    # As the Placement sync writes them; host-0003 is in both, host-0004
    # in none.
    for host, aggregates in (('host-0000', [AGG_A]), ('host-0001', [AGG_A]),
                             ('host-0002', [AGG_B]),
                             ('host-0003', [AGG_B, AGG_A])):
        placement_sync.set_aggregates(host, aggregates)
    _check_plans_of_every_kind('aggregates', (
        ([AGG_A], ['host-0000', 'host-0001', 'host-0003']),
        ([AGG_B], ['host-0002', 'host-0003']),
        # In any of them; the case of a UUID does not matter.
        ([AGG_A.upper(), AGG_B], ['host-0000', 'host-0001',
                                  'host-0002', 'host-0003']),
        (['c0000000-0000-4000-8000-00000000000c'], [])))
    # With the other selectors; the targets written are those planned.
    rollout = _db_create(
        {'kind': 'bitstream', 'image': 'bs-new', 'selector': {
            'aggregates': [AGG_B], 'deployable_names': ['region1']}},
        'p1', ME, NOW)
    assert [(t['hostname'], t['target_kind']) for t in _targets(
        rollout['uuid'])] == [('host-0002', 'deployable'),
                              ('host-0003', 'deployable')]
    assert rollout['selector'] == {'aggregates': [AGG_B],
                                   'deployable_names': ['region1']}
    with pytest.raises(exception.Invalid):
        _db_create({'kind': 'driver',
                    'image': rollout_kinds.driver_image('opae', '2.0'),
                    'selector': {'aggregates': [AGG_A],
                                 'hostnames': ['host-0002']}},
                   'p1', ME, NOW)


def test_selected_by_host_labels_for_every_kind(migrated_db):
    from cyborg_like.db import hosts
    _fleet(4)       # 8 regions on 4 cards on 4 hosts
    hosts.set_labels('host-0000', {'ring': 'canary', 'rack': 'r1'}, 60)
    hosts.set_labels('host-0001', {'ring': 'canary', 'rack': 'r2'}, 60)
    # Look-alikes a substring match must not take: another key ending in
    # "ring", a value starting with "canary", a value holding the text.
    hosts.set_labels('host-0002', {'spring': 'canary', 'ring': 'canary2',
                                   'note': '"ring": "canary"'}, 60)
    # Set, then removed.
    hosts.set_labels('host-0003', {'ring': 'canary'}, 60)
    assert hosts.set_labels('host-0003', {'ring': None, 'rack': 'r2'}, 60)[
        'labels'] == {'rack': 'r2'}
    _check_plans_of_every_kind('labels', (
        ({'ring': 'canary'}, ['host-0000', 'host-0001']),
        ({'ring': 'canary', 'rack': 'r2'}, ['host-0001']),
        ({'rack': 'r2'}, ['host-0001', 'host-0003']),
        ({'ring': 'canary', 'rack': 'r3'}, [])))
    with pytest.raises(exception.HostNotFound):
        hosts.set_labels('nowhere', {'ring': 'canary'}, 60)


def _set(uuid, **values):
    with db_api.writer() as session:
        session.execute(sa.update(models.Rollout)
                        .where(models.Rollout.uuid == uuid).values(**values))


def test_every_illegal_rollout_transition_is_refused(migrated_db):
    _fleet(1)
    uuid = _create({})['uuid']
    machine = states.ROLLOUT
    for state, event in itertools.product(machine.states, machine.events):
        _set(uuid, state=state, reason='before')
        if machine.allows(state, event):
            assert rollouts.apply(uuid, event, now=NOW)['state'] == \
                machine.target(event)
        else:
            with pytest.raises(exception.Conflict):
                rollouts.apply(uuid, event, now=NOW)
            shown = rollouts.get(uuid)
            assert (shown['state'], shown['reason']) == (state, 'before')


def _begin(target, conductor=ME):
    return rollout_targets.begin(target['id'], 'bitstream', 'bs-new',
                                 'p1', conductor, NOW)


def test_a_target_begins_once_and_only_for_its_owner(migrated_db):
    _fleet(1)
    conductors.beat(ME, 'c1')
    uuid = _create({})['uuid']
    first, second = _targets(uuid)
    # Another conductor (not the owner) cannot begin it.
    assert _begin(first, OTHER) is None
    job, operation = _begin(first)
    assert job['bitstream_id'] == 'bs-new'
    # Never twice: every later begin, from any state, changes nothing.
    for state in states.ROLLOUT_TARGET.states:
        with db_api.writer() as session:
            session.execute(sa.update(models.RolloutTarget).where(
                models.RolloutTarget.id == second['id']).values(state=state))
        if not states.ROLLOUT_TARGET.allows(state, states.BEGIN):
            assert _begin(second) is None
    assert _begin(first) is None
    shown = {t['id']: t for t in _targets(uuid)}[first['id']]
    assert (shown['state'], shown['operation_uuid'],
            shown['last_known_good']) == ('in_progress', operation['uuid'],
                                          'bs-old')
    # A paused rollout starts nothing.
    _set(uuid, state=states.ROLLOUT_PAUSED)
    with db_api.writer() as session:
        session.execute(sa.update(models.RolloutTarget).where(
            models.RolloutTarget.id == second['id']).values(
            state=states.TARGET_PENDING))
    assert _begin(second) is None


def test_a_silent_owners_rollout_is_taken_over_by_one(migrated_db):
    _fleet(1)
    conductors.beat(OTHER, 'c2')
    uuid = _create({}, owner=OTHER)['uuid']
    # Its owner is alive: nobody takes it.
    assert rollouts.claim(ME, 60) == []
    with db_api.writer() as session:
        session.execute(sa.update(models.Conductor).values(
            last_heartbeat=datetime.datetime(2000, 1, 1)))
    third = '00000000-0000-4000-8000-00000000c0d3'
    conductors.beat(ME, 'c1')
    conductors.beat(third, 'c3')
    won = [rollouts.claim(ME, 60), rollouts.claim(third, 60)]
    assert [len(w) for w in won] == [1, 0]
    assert rollouts.get(uuid)['conductor_uuid'] == ME


class _Started:
    """What the manager's worker would be handed."""

    def __init__(self):
        self.jobs = []

    def __call__(self, context, operation_uuid, job):
        self.jobs.append(operation_uuid)


@pytest.mark.parametrize('hosts', [20, 200])
def test_a_step_costs_the_same_queries_whatever_the_fleet(migrated_db,
                                                          hosts):
    _fleet(hosts)
    conductors.beat(ME, 'c1')
    started = _Started()
    queue = workqueue.WorkQueue(2, 100)
    driver = conductor_rollouts.Rollouts(CONF, queue, {'bitstream': started},
                                         ME, clock=lambda: NOW)
    rollout = _create({'canary': 0, 'waves': ['20%'], 'max_unavailable': 4,
                       'max_unavailable_per_host': 1})
    try:
        with count_queries() as queries:
            driver.run()
    finally:
        queue.shutdown()
    assert len(started.jobs) == 4
    # The step: claim (2), sync (6: the last marks an aborted rollout's
    # gating targets unverified), load, gate (3), progress (3), the wave
    # advanced, candidates; then each target started costs its begin
    # transaction (5 of ours, 8 of the programming's own checks). The
    # same numbers for 40 regions as for 400.
    assert queries['n'] == 17 + 4 * 13, queries['statements']
    shown = rollouts.get(rollout['uuid'])
    assert shown['targets']['in_progress'] == 4
    assert len({t['hostname'] for t in _targets(rollout['uuid'])
                if t['state'] == 'in_progress'}) == 4


# Driver rollouts: hosts as targets.
def _hosts(versions):
    """The _fleet's hosts, with agents that run playbooks and the opae
    version each one's record holds (``versions``: {host: version})."""
    with db_api.writer() as session:
        session.execute(sa.update(models.Host).values(agent_version='1.2'))
        for hostname, version in versions.items():
            session.execute(sa.update(models.Host).where(
                models.Host.hostname == hostname).values(
                driver_versions='{"opae": "%s"}' % version))


def _driver_create(strategy, selector=None, owner=ME):
    return _db_create(
        {'kind': 'driver', 'image': rollout_kinds.driver_image('opae', '2.0'),
         'selector': selector or {}, 'strategy': strategy}, 'p1', owner,
        NOW)


def test_driver_targets_are_hosts_in_waves(migrated_db):
    _fleet(6)
    inventory.reconcile('gpu-host', [{
        'type': 'GPU', 'vendor': '0x10de', 'model': 'A100',
        'controlpath_id': {'cpid_type': 'PCI', 'cpid_info':
                           wire.pci_address_info('0000:3b:00.0')},
        'deployables': []}], 'g')
    _hosts({'host-0000': '1.0', 'host-0001': '1.0', 'host-0002': '1.5'})
    image = rollout_kinds.driver_image('opae', '2.0')
    # Every host, or those with a device of the vendor, or of a type, or
    # at a version (null: none of the family).
    assert _plan('driver', image, {}, {})['targets'] == 7
    for selector, hosts in (
            ({'vendor': '0x8086'}, 6), ({'device_type': 'GPU'}, 1),
            ({'current_version': '1.0'}, 2),
            ({'current_version': None, 'device_type': 'FPGA'}, 3),
            ({'hostnames': ['host-0002', 'gpu-host'],
              'model': 'PAC N3000'}, 1)):
        assert _plan('driver', image, selector, {})['targets'] == \
            hosts, selector
    with pytest.raises(exception.Invalid):
        _plan('driver', image, {'deployable_names': ['region0']}, {})
    with pytest.raises(exception.Invalid):
        _plan('bitstream', 'bs-new', {'current_version': '1.0'}, {})
    rollout = _driver_create({'canary': 1, 'waves': [2, '50%']},
                             {'vendor': '0x8086'})
    assert (rollout['driver'], rollout['version'], rollout['waves']) == \
        ('opae', '2.0', 2)
    found = _targets(rollout['uuid'])
    # One target per host, named by its hostname, in host order.
    assert [(t['target_kind'], t['target_uuid'], t['hostname'], t['wave'])
            for t in found] == [('host', 'host-%04d' % n, 'host-%04d' % n, w)
                                for n, w in enumerate([0, 1, 1, 2, 2, 2])]


def test_a_driver_target_begins_a_driver_operation(migrated_db):
    _fleet(2)
    _hosts({'host-0000': '1.0'})
    conductors.beat(ME, 'c1')
    uuid = _driver_create({'waves': [1]})['uuid']
    first, second = _targets(uuid)
    jobs = [rollout_targets.begin(t['id'], 'driver',
                                  rollout_kinds.driver_image('opae', '2.0'),
                                  'p1', ME, NOW) for t in (first, second)]
    # An upgrade over the host's version, an install where it had none;
    # the last-known-good is the host's version before.
    assert [(j['action'], j['hostname'], j['parameters'], o['type'])
            for j, o in jobs] == [
        ('upgrade', 'host-0000', {'version': '2.0'}, 'driver_upgrade'),
        ('install', 'host-0001', {'version': '2.0'}, 'driver_install')]
    shown = _targets(uuid)
    assert [(t['state'], t['last_known_good'], t['applied'])
            for t in shown] == [('in_progress', '1.0', '2.0'),
                                ('in_progress', None, '2.0')]
    # The host's devices of the family are drained while it runs.
    with db_api.reader() as session:
        assert session.scalar(sa.select(sa.func.count()).where(
            models.Device.drained_by.is_not(None))) == 2
    # Rolling back: the version before, or remove where there was none.
    with db_api.writer() as session:
        session.execute(sa.update(models.Operation).values(
            state=states.SUCCEEDED))
        session.execute(sa.update(models.Device).values(drained_by=None))
    rollout_targets.sync_operations(NOW)
    _set(uuid, state=states.ROLLING_BACK)
    reverted = [rollout_targets.begin_revert(t['id'], 'driver', 'p1', ME, NOW)
                for t in shown]
    assert [(j['action'], j['parameters']) for j, _o in reverted] == [
        ('upgrade', {'version': '1.0'}), ('remove', {})]


def test_the_health_gate_of_hosts(migrated_db):
    _fleet(3)
    # host-0002's record does not hold the version applied.
    _hosts({'host-0000': '2.0', 'host-0001': '2.0', 'host-0002': '1.0'})
    uuid = _driver_create({})['uuid']
    with db_api.writer() as session:
        session.execute(sa.update(models.RolloutTarget).values(
            state=states.GATING, applied='2.0', finished_at=NOW))
        session.execute(sa.update(models.Device).where(
            models.Device.hostname == 'host-0001').values(
            health='unhealthy'))
    assert rollout_targets.gate(_rollout_id(uuid), 0, NOW, 'driver',
                                rollout_kinds.driver_image('opae', '2.0')) == {
        'failed': 2, 'passed': 1}
    assert [(t['hostname'], t['state'], (t['reason'] or '')[:40])
            for t in _targets(uuid)] == [
        ('host-0000', 'done', ''),
        ('host-0001', 'failed', 'Health gate: the device turned unhealthy'),
        ('host-0002', 'failed', 'Health gate: the host does not read back')]


def test_a_host_is_busy_while_a_workload_holds_a_device_of_the_family(
        migrated_db):
    _fleet(2)
    _hosts({})
    uuid = _driver_create({'canary': 0})['uuid']
    with db_api.writer() as session:
        device = session.scalar(sa.select(models.Device.id).where(
            models.Device.hostname == 'host-0001'))
        session.execute(sa.update(models.AttachHandle).where(
            models.AttachHandle.deployable_id.in_(
                sa.select(models.Deployable.id).where(
                    models.Deployable.device_id == device)))
            .values(in_use=True))
    rollout_id = _rollout_id(uuid)
    found = {c.hostname: c.busy for c in rollout_targets.candidates(
        rollout_id, 1, 10, True, 'driver',
        rollout_kinds.driver_image('opae', '2.0'))}
    assert found == {'host-0000': False, 'host-0001': True}
    # Not for another family: xrt drives none of these (Intel) FPGAs.
    found = {c.hostname: c.busy for c in rollout_targets.candidates(
        rollout_id, 1, 10, True, 'driver',
        rollout_kinds.driver_image('xrt', '2.0'))}
    assert found == {'host-0000': False, 'host-0001': False}


def test_a_driver_step_costs_the_same_queries_whatever_the_fleet(
        migrated_db):
    _fleet(220, regions=1)
    _hosts({})
    conductors.beat(ME, 'c1')
    started = _Started()
    queue = workqueue.WorkQueue(2, 100)
    driver = conductor_rollouts.Rollouts(CONF, queue, {'driver': started},
                                         ME, clock=lambda: NOW)
    names = ['host-%04d' % n for n in range(220)]
    costs = []
    try:
        # 20 hosts, then 200 others: the same step.
        for hostnames in (names[:20], names[20:]):
            rollout = _driver_create({'canary': 0, 'waves': ['20%'],
                                      'max_unavailable': 4},
                                     {'hostnames': hostnames})
            rollout_id = _rollout_id(rollout['uuid'])
            with count_queries() as queries:
                driver.step(rollout_id)
            costs.append(queries['n'])
            assert rollouts.get(rollout['uuid'])['targets'][
                'in_progress'] == 4
    finally:
        queue.shutdown()
    assert len(started.jobs) == 8
    # load, gate (3), progress (3), the wave advanced, candidates; then
    # each host started costs its begin transaction (ours, and the driver
    # operation's own checks, drain and Placement mark).
    assert costs[0] == costs[1] == 9 + 4 * 18, costs


def _rollout_id(uuid):
    with db_api.reader() as session:
        return session.scalar(sa.select(models.Rollout.id).where(
            models.Rollout.uuid == uuid))


def _interrupt(operation_uuid):
    """The operation failed by the liveness sweep: its conductor died."""
    from cyborg_like.db import operations
    with db_api.writer() as session:
        session.execute(sa.update(models.Operation).where(
            models.Operation.uuid == operation_uuid).values(
            state=states.FAILED, detail=operations.INTERRUPTED))


def _target(uuid, target_id):
    return {t['id']: t for t in _targets(uuid)}[target_id]


def test_an_interrupted_target_is_begun_again_up_to_the_limit(migrated_db):
    _fleet(1)
    conductors.beat(ME, 'c1')
    uuid = _create({'max_unavailable': 2})['uuid']
    region, card = _targets(uuid)
    _job, first = _begin(region)
    _interrupt(first['uuid'])
    ended = rollout_targets.sync_operations(NOW, retries=1)
    assert ended[(states.IN_PROGRESS, states.RETRY)] == 1
    again = _target(uuid, region['id'])
    assert (again['state'], again['attempts'], again['reason']) == (
        'pending', 1, rollout_targets.INTERRUPTED_AGAIN)
    # Whatever the region reads now, what it held before the first
    # attempt is what a rollback restores.
    with db_api.writer() as session:
        session.execute(sa.update(models.Deployable).values(
            bitstream_id='bs-half'))
    _job, second = _begin(region)
    again = _target(uuid, region['id'])
    assert (again['state'], again['attempts'], again['last_known_good'],
            again['operation_uuid'], again['reason']) == (
        'in_progress', 2, 'bs-old', second['uuid'],
        rollout_targets.INTERRUPTED_AGAIN)
    # Interrupted again: past the limit, it fails with its operation's
    # reason (and counts against the failure budget).
    _interrupt(second['uuid'])
    rollout_targets.sync_operations(NOW, retries=1)
    failed = _target(uuid, region['id'])
    assert (failed['state'], failed['attempts']) == ('failed', 2)
    assert 'its conductor stopped' in failed['reason']
    # A card's interrupted flash is never begun again (it may hold half
    # an image): shown here by the target's kind, as the update decides.
    with db_api.writer() as session:
        session.execute(sa.update(models.RolloutTarget).where(
            models.RolloutTarget.id == card['id']).values(
            target_kind='device'))
    _job, flash = _begin(card)
    _interrupt(flash['uuid'])
    rollout_targets.sync_operations(NOW, retries=5)
    assert _target(uuid, card['id'])['state'] == 'failed'


def test_interrupted_targets_fail_at_once_with_no_retries(migrated_db):
    _fleet(1)
    conductors.beat(ME, 'c1')
    uuid = _create({})['uuid']
    region, _other = _targets(uuid)
    _job, operation = _begin(region)
    _interrupt(operation['uuid'])
    rollout_targets.sync_operations(NOW, retries=0)
    assert _target(uuid, region['id'])['state'] == 'failed'
