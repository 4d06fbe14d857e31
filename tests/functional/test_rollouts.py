"""Fleet rollouts end to end through the API: one conductor and five
agents (hosts) in one process, each host an FPGA of two regions holding
``bs-old``; the rollout programs ``bs-new`` through the real programming
operations. A host's fake vendor tool fails on the image when the test
says so, and a host's devices turn unhealthy when it says so. Nothing of
ours is mocked."""

import itertools
import json
import os
import threading
import time

import pytest
import yaml

from cyborg_like.agent import service as agent_service
from cyborg_like.common import context
from cyborg_like.common import exception
from cyborg_like.conductor import metrics
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import operations
from cyborg_like.db import rollout_targets
from cyborg_like.drivers import base
from cyborg_like.drivers import fake
from tests import lost_commits
from tests.functional import catalog_images
from tests.functional import cloud as cloud_module
from tests.functional import test_notifications as notices

ADMIN = context.get_admin_context()
HOSTS = [cloud_module.HOST] + ['compute-%d.example.org' % n
                               for n in range(2, 6)]
REGIONS = len(HOSTS) * 2
ENDED = ('succeeded', 'failed', 'aborted', 'rolled_back')


class FleetDriver(fake.FakeDriver, base.HealthReporting):
    """The fake driver of one host: programming ``failing[host]`` fails
    there as the vendor tool would, and the host's devices read unhealthy
    while it is in ``sick``; programming takes ``delay`` seconds, and
    first waits for one of ``permits`` (a semaphore the test releases)
    when the test sets one."""

    failing = {}
    failing_firmware = {}     # host -> text in the image that fails there
    sick = set()
    # Long enough that targets started together overlap, so a breach of
    # max_unavailable or of the waves' order shows in the operations'
    # times: a duration of the work, not a wait for anything.
    delay = 0.2
    permits = None

    def __init__(self, conf, host):
        super().__init__(conf)
        self.host = host

    def program(self, controlpath_id, deployable_name, bitstream_path,
                bitstream_id):
        if self.permits is not None:
            assert self.permits.acquire(timeout=30), 'never let through'
        time.sleep(self.delay)
        if self.failing.get(self.host) == bitstream_id:
            raise exception.DriverError(
                driver=self.name, reason='PR interface id mismatch on %s'
                % self.host)
        return super().program(controlpath_id, deployable_name,
                               bitstream_path, bitstream_id)

    def flash_firmware(self, controlpath_id, image_path):
        with open(image_path) as f:
            text = f.read()
        if self.failing_firmware.get(self.host, '\0') in text:
            raise exception.DriverError(
                driver=self.name, reason='fpgasupdate: authentication of '
                'the image failed on %s' % self.host)
        return super().flash_firmware(controlpath_id, image_path)

    def health(self):
        sick = self.host in self.sick
        return [base.DeviceHealth(device.controlpath_id, healthy=not sick,
                                  reasons=['CRC error'] if sick else [])
                for device in self.discover()]


@pytest.fixture
def cloud(tmp_path, monkeypatch):
    FleetDriver.failing, FleetDriver.sick = {}, set()
    FleetDriver.failing_firmware = {}
    FleetDriver.permits = None
    inventory = tmp_path / 'inventory.yaml'
    fpga = yaml.safe_load(open(cloud_module.INVENTORY))['devices'][0]
    for region in fpga['deployables']:
        region['bitstream_id'] = 'bs-old'
    inventory.write_text(yaml.safe_dump({'devices': [fpga]}))
    monkeypatch.setattr(
        'cyborg_like.agent.resource_tracker.load_drivers',
        lambda conf: {'fake': FleetDriver(CONF, cloud_module.HOST)})
    cloud = cloud_module.Cloud(str(inventory), overrides={
        ('rollouts', 'interval'): 0.1,
        ('agent', 'heartbeat_interval'): 1,
        ('health', 'recovery_checks'): 1,
        ('oslo_messaging_notifications', 'driver'): ['test'],
        # Today's notifications and the versioned ones (docs/
        # notifications.md).
        ('notifications', 'notification_format'): 'both',
        ('agent', 'image_cache_dir'): str(tmp_path / 'cache'),
        ('conductor', 'firmware_timeout'): 30,
        # Agents fetch catalog images (firmware) from the API over HTTP.
    }, http=True).start()
    try:
        for name in ('bs-old', 'bs-new'):
            path = os.path.join(CONF.agent.bitstream_dir, name)
            with open(path, 'w') as f:
                f.write('GBS %s\n' % name)
        for host in HOSTS[1:]:
            agent = agent_service.AgentService(
                CONF, host=host, drivers={'fake': FleetDriver(CONF, host)})
            agent.start()
            cloud.services.append(agent)
        cloud.wait_for(lambda: len(_regions(cloud)) == REGIONS)
        yield cloud
    finally:
        cloud.stop()


def _regions(cloud):
    devices = {d['id']: d for d in cloud.list_devices()}
    return {d['uuid']: dict(d, hostname=devices[d['device_id']]['hostname'])
            for d in cloud.conductor_api.list_deployables(
                ADMIN, {}, 1000, None, 'created_at', 'asc')
            if d['device_id'] in devices}


def _create(cloud, strategy=None, **extra):
    body = dict({'kind': 'bitstream', 'image': 'bs-new',
                 'strategy': strategy or {}}, **extra)
    status, rollout = cloud.call('POST', '/v2/rollouts', body)
    assert status == (200 if body.get('dry_run') else 201), rollout
    return rollout


def _show(cloud, uuid):
    status, rollout = cloud.call('GET', '/v2/rollouts/%s' % uuid)
    assert status == 200, rollout
    return rollout


def _ended(cloud, uuid, timeout=30):
    return cloud.wait_for(lambda: (lambda r: r if r['state'] in ENDED
                                   else None)(_show(cloud, uuid)), timeout)


def _targets(cloud, uuid, query=''):
    found, path = [], '/v2/rollouts/%s/targets?limit=7%s' % (uuid, query)
    while path:
        status, page = cloud.call('GET', path.replace('http://localhost',
                                                      ''))
        assert status == 200, page
        found += page['targets']
        path = page.get('next')
    return found


def _operations(cloud, uuid):
    """(target, start, end, host) of every operation the rollout ran."""
    regions = _regions(cloud)
    from cyborg_like.db import rollouts as rollout_db
    return [(target, start, end, regions[target]['hostname'])
            for _uuid, target, start, end in
            rollout_db.ended_operations(uuid)]


def _by_uuid(uuid):
    from cyborg_like.db import rollouts as rollout_db
    return rollout_db.ended_operations(uuid)


def _most_at_once(intervals):
    """The most intervals (start, end) overlapping at any instant."""
    events = sorted([(s, 1) for s, _e in intervals] +
                    [(e, -1) for _s, e in intervals])
    running = most = 0
    for _when, step in events:
        running += step
        most = max(most, running)
    return most


def _held(cloud):
    return {uuid: r['bitstream_id'] for uuid, r in _regions(cloud).items()}


def _a_whole_run(cloud):
    """Return once a run of the rollouts' periodic that began after this
    call has ended (the runs one after the other, each counted at its
    end): whatever the periodic would have done by now, it has done, and
    a run that had read the state before the call is over too."""
    runs = metrics.ROLLOUT_RUNS._value.get()
    cloud.wait_for(lambda: metrics.ROLLOUT_RUNS._value.get() >= runs + 2)


def _operation_count():
    from cyborg_like.db import api as db_api
    from cyborg_like.db import models
    with db_api.reader() as session:
        return session.query(models.Operation).count()


def test_dry_run_shows_the_waves_and_touches_nothing(cloud):
    before, operations = _held(cloud), _operation_count()
    plan = _create(cloud, {'canary': 1, 'waves': ['30%']}, dry_run=True)
    assert plan['dry_run'] is True and plan['targets'] == REGIONS
    # 1 canary, then waves of 3 (30% of 10, rounded up) over 9 targets.
    assert [(w['wave'], w['targets']) for w in plan['waves']] == \
        [(0, 1), (1, 3), (2, 3), (3, 3)]
    assert plan['waves'][0]['first_host'] == HOSTS[0]
    status, listed = cloud.call('GET', '/v2/rollouts')
    assert (status, listed['rollouts']) == (200, [])
    # A run of the periodic starts a rollout's targets as operations, in
    # the run: none.
    _a_whole_run(cloud)
    assert _operation_count() == operations
    assert _held(cloud) == before


def test_rollout_goes_canary_then_waves_within_bounds(cloud):
    rollout = _create(cloud, {'canary': 1, 'waves': ['30%'],
                              'max_unavailable': 2,
                              'max_unavailable_per_host': 1})
    assert rollout['state'] == 'running'
    assert rollout['targets'] == {'pending': REGIONS, 'total': REGIONS}
    assert rollout['waves'] == 3
    done = _ended(cloud, rollout['uuid'])
    assert done['state'] == 'succeeded', done
    assert done['targets'] == {'done': REGIONS, 'total': REGIONS}
    assert set(_held(cloud).values()) == {'bs-new'}
    targets = _targets(cloud, rollout['uuid'])
    assert len(targets) == REGIONS
    assert all(t['last_known_good'] == 'bs-old' and t['applied'] == 'bs-new'
               for t in targets)
    ops = _operations(cloud, rollout['uuid'])
    assert len(ops) == REGIONS      # each region changed once
    assert _most_at_once([(s, e) for _t, s, e, _h in ops]) <= 2
    for host in HOSTS:
        assert _most_at_once([(s, e) for _t, s, e, h in ops
                              if h == host]) <= 1
    # Waves in order: every operation of a wave began after every
    # operation of the waves before it ended.
    wave_of = {t['target_uuid']: t['wave'] for t in targets}
    for earlier, later in itertools.combinations(ops, 2):
        first, second = sorted((earlier, later),
                               key=lambda o: wave_of[o[0]])
        if wave_of[first[0]] < wave_of[second[0]]:
            assert first[2] <= second[1]


def test_a_target_begun_in_a_lost_commit_is_begun_again(cloud,
                                                       monkeypatch):
    """The canary's begin is committed, but its COMMIT loses the
    connection (a Galera writer killed: tests/cluster): the step sees an
    error and hands the operation to no job. The conductor's sweep finds
    it carried by nobody twice running and fails it as lost; the rollout
    begins the target again and ends."""
    lost, armed = [], threading.local()
    real_begin = rollout_targets.begin

    def begin(target_id, *args, **kwargs):
        armed.on = not lost
        lost.append(target_id)
        try:
            return real_begin(target_id, *args, **kwargs)
        finally:
            armed.on = False
    lost_commits.install(db_api.get_engine(), monkeypatch,
                         lambda: True if getattr(armed, 'on', False)
                         else None)
    monkeypatch.setattr(rollout_targets, 'begin', begin)
    rollout = _create(cloud, {'canary': 1},
                      selector={'hostnames': [cloud_module.HOST]})
    cloud.wait_for(lambda: lost)
    _a_whole_run(cloud)
    [canary] = _targets(cloud, rollout['uuid'], '&wave=0')
    assert canary['state'] == 'in_progress', canary
    assert operations.get(canary['operation_uuid'])['state'] == 'pending'
    sweep = cloud.services[0].manager.lost_operations.sweep
    assert sweep() == []            # a suspect: handed over just now?
    assert sweep() == [canary['operation_uuid']]
    assert operations.get(canary['operation_uuid'])['detail'] == \
        operations.LOST
    done = _ended(cloud, rollout['uuid'])
    assert done['state'] == 'succeeded', done
    [canary] = _targets(cloud, rollout['uuid'], '&wave=0')
    assert (canary['state'], canary['attempts'], canary['reason']) == (
        'done', 2, rollout_targets.INTERRUPTED_AGAIN)
    assert {r['bitstream_id'] for r in _regions(cloud).values()
            if r['hostname'] == cloud_module.HOST} == {'bs-new'}


def test_canary_failure_stops_and_rolls_back_the_canary(cloud):
    FleetDriver.failing = {HOSTS[0]: 'bs-new'}
    rollout = _create(cloud, {'canary': 1, 'waves': ['50%'],
                              'failure_budget': 5})
    done = _ended(cloud, rollout['uuid'])
    assert done['state'] == 'failed'
    assert done['reason'].startswith('The canary failed.')
    assert HOSTS[0] in done['reason']
    assert 'PR interface id mismatch' in done['reason']
    [canary] = _targets(cloud, rollout['uuid'], '&wave=0')
    assert canary['state'] == 'rolled_back'
    assert 'PR interface id mismatch' in canary['reason']
    assert canary['rollback_operation_uuid'] is not None
    others = _targets(cloud, rollout['uuid'], '&state=pending')
    assert len(others) == REGIONS - 1
    # Nothing but the canary was touched: one change, one rollback.
    assert {o[0] for o in _operations(cloud, rollout['uuid'])} == \
        {canary['target_uuid']}
    assert set(_held(cloud).values()) == {'bs-old'}


def test_failure_in_wave_3_rolls_back_waves_1_to_3(cloud):
    # No canary; waves of 2 regions, one host each: wave 3 is the third.
    FleetDriver.failing = {HOSTS[2]: 'bs-new'}
    rollout = _create(cloud, {'canary': 0, 'waves': [2],
                              'max_unavailable': 2,
                              'max_unavailable_per_host': 2})
    done = _ended(cloud, rollout['uuid'])
    assert done['state'] == 'failed', done
    assert 'failure budget of 0' in done['reason']
    assert HOSTS[2] in done['reason']
    targets = _targets(cloud, rollout['uuid'])
    by_wave = {}
    for target in targets:
        by_wave.setdefault(target['wave'], []).append(target)
    assert sorted(by_wave) == [1, 2, 3, 4, 5]
    for wave in (1, 2, 3):
        assert {t['state'] for t in by_wave[wave]} == {'rolled_back'}
    assert any('PR interface id mismatch' in (t['reason'] or '')
               for t in by_wave[3])
    for wave in (4, 5):
        assert {t['state'] for t in by_wave[wave]} == {'pending'}
        assert all(t['operation_uuid'] is None for t in by_wave[wave])
    held = _held(cloud)
    assert {held[t['target_uuid']] for t in targets} == {'bs-old'}
    # Rolled back in waves, latest first, within the bound.
    ops = _operations(cloud, rollout['uuid'])
    assert len(ops) == 2 * 6        # 6 regions changed (2 failed), 6 back
    assert _most_at_once([(s, e) for _t, s, e, _h in ops]) <= 2
    started = {}
    for target in targets:
        for uuid, _target, start, _end in _by_uuid(rollout['uuid']):
            if uuid == target['rollback_operation_uuid']:
                started[target['wave']] = min(
                    start, started.get(target['wave'], start))
    assert started[3] < started[2] < started[1]


def test_health_gate_failure_fails_the_wave(cloud):
    rollout = _create(cloud, {'canary': 2, 'waves': ['100%'],
                              'max_unavailable': 2, 'gate_seconds': 3,
                              'max_unavailable_per_host': 2})

    def gating():
        found = _targets(cloud, rollout['uuid'], '&state=gating')
        return found if len(found) == 2 else None
    cloud.wait_for(gating)
    FleetDriver.sick = {HOSTS[0]}
    done = _ended(cloud, rollout['uuid'])
    assert done['state'] == 'failed'
    assert 'Health gate' in done['reason']
    canary = _targets(cloud, rollout['uuid'], '&wave=0')
    assert [t['state'] for t in canary] == ['rolled_back'] * 2
    assert all('Health gate' in t['reason'] for t in canary)
    assert len(_targets(cloud, rollout['uuid'], '&state=pending')) == \
        REGIONS - 2


def test_busy_regions_are_skipped(cloud):
    region, _arq = _bind_region(cloud, HOSTS[2],
                                '10000000-0000-0000-0000-000000000001')
    rollout = _create(cloud, {'canary': 1, 'waves': ['50%'],
                              'max_unavailable': 3})
    done = _ended(cloud, rollout['uuid'])
    assert done['state'] == 'succeeded'
    assert done['targets'] == {'done': REGIONS - 1, 'skipped_busy': 1,
                               'total': REGIONS}
    [skipped] = _targets(cloud, rollout['uuid'], '&state=skipped_busy')
    assert skipped['target_uuid'] == region['uuid']
    assert 'workload' in skipped['reason']
    assert _held(cloud)[region['uuid']] == 'bs-old'


def _bind_region(cloud, host, instance):
    """An ARQ bound to a region of ``host``: (the region, the ARQ)."""
    api = cloud.conductor_api
    if not api.list_device_profiles(ADMIN, ['fpga'], 10, None, 'created_at',
                                    'asc'):
        api.create_device_profile(ADMIN, 'fpga', [{'resources:FPGA': '1'}],
                                  None)
    region = next(r for r in _regions(cloud).values()
                  if r['hostname'] == host)
    arq = api.create_arqs(ADMIN, 'fpga', None)[0]['uuid']
    api.bind_arqs(ADMIN, {arq: {
        'hostname': host, 'device_rp_uuid': region['rp_uuid'],
        'instance_uuid': instance, 'project_id': None}})
    cloud.wait_for(lambda: api.get_arq(ADMIN, arq)['state'] == 'Bound')
    return region, arq


def test_busy_regions_are_waited_for(cloud):
    region, arq = _bind_region(cloud, HOSTS[1],
                               '10000000-0000-0000-0000-000000000002')
    rollout = _create(cloud, {'canary': 0, 'waves': ['100%'],
                              'max_unavailable': 3, 'workloads': 'wait',
                              'wait_timeout': 120})
    uuid = rollout['uuid']
    cloud.wait_for(lambda: _show(cloud, uuid)['targets'].get('done') ==
                   REGIONS - 1, 30)
    _a_whole_run(cloud)     # another look at the busy region: still waited
    waiting = _show(cloud, uuid)
    assert (waiting['state'], waiting['targets']['pending']) == (
        'running', 1)
    cloud.conductor_api.unbind_arqs(ADMIN, [arq])
    done = _ended(cloud, uuid)
    assert (done['state'], done['targets']) == (
        'succeeded', {'done': REGIONS, 'total': REGIONS})
    assert _held(cloud)[region['uuid']] == 'bs-new'


def test_busy_regions_waited_for_past_the_timeout_are_skipped(cloud):
    region, _arq = _bind_region(cloud, HOSTS[1],
                                '10000000-0000-0000-0000-000000000003')
    rollout = _create(cloud, {'canary': 0, 'waves': ['100%'],
                              'max_unavailable': 3, 'workloads': 'wait',
                              'wait_timeout': 2})
    done = _ended(cloud, rollout['uuid'])
    assert done['targets'] == {'done': REGIONS - 1, 'skipped_busy': 1,
                               'total': REGIONS}
    [skipped] = _targets(cloud, rollout['uuid'], '&state=skipped_busy')
    assert skipped['target_uuid'] == region['uuid']
    assert 'past wait_timeout' in skipped['reason']


def test_pause_resume_abort_and_manual_rollback(cloud):
    # Programming goes only as far as the test lets it, one permit each
    # (and takes no time: nothing here measures overlaps).
    FleetDriver.permits, FleetDriver.delay = threading.Semaphore(0), 0
    try:
        rollout = _create(cloud, {'canary': 1, 'waves': [1]})
        uuid = rollout['uuid']
        status, paused = cloud.call('POST', '/v2/rollouts/%s/pause' % uuid)
        assert (status, paused['state']) == (200, 'paused')
        status, body = cloud.call('POST', '/v2/rollouts/%s/pause' % uuid)
        assert status == 409, body
        # A run that read the rollout before the pause is over; the
        # canary, if it started, ends; then a run changes nothing.
        _a_whole_run(cloud)
        FleetDriver.permits.release()
        frozen = _settled(cloud, uuid)
        _a_whole_run(cloud)
        assert _show(cloud, uuid)['targets'] == frozen
        assert frozen.get('done', 0) + frozen.get('gating', 0) <= 1
        status, resumed = cloud.call('POST', '/v2/rollouts/%s/resume' % uuid)
        # The reason follows the state: no longer "Paused by an operator"
        # (issue 34).
        assert (status, resumed['state'], resumed['reason']) == (
            200, 'running', None)
        FleetDriver.permits.release(3)
        cloud.wait_for(lambda: _show(cloud, uuid)['targets'].get('done', 0)
                       >= 3, 20)
        status, aborted = cloud.call('POST', '/v2/rollouts/%s/abort' % uuid)
        assert (status, aborted['state'], aborted['reason']) == (
            200, 'aborted', 'Aborted by an operator.')
        # Likewise: what was under way ends and is recorded; a run starts
        # nothing.
        _a_whole_run(cloud)
        FleetDriver.permits.release(REGIONS)
        after = _settled(cloud, uuid)
        _a_whole_run(cloud)
        assert _show(cloud, uuid)['targets'] == after
        assert after['pending'] >= 1
        # None is left gating for ever (issue 34): gating when the abort
        # came, or when its operation ended after it, it is unverified.
        assert 'gating' not in after, after
        status, cut = cloud.call(
            'GET', '/v2/rollouts/%s/targets?state=unverified' % uuid)
        assert status == 200
        assert {t['reason'] for t in cut['targets']} <= {
            'Its gate was cut short: the rollout was aborted.'}
        assert len(cut['targets']) == after.get('unverified', 0)
        changed = after.get('done', 0) + after.get('unverified', 0)
        assert len(_operations(cloud, uuid)) == changed
        FleetDriver.permits = None
        status, back = cloud.call('POST', '/v2/rollouts/%s/rollback' % uuid)
        assert (status, back['state'], back['reason']) == (
            200, 'manual_rollback', 'Rolled back by an operator.')
        done = _ended(cloud, uuid)
        assert done['state'] == 'rolled_back'
        assert done['targets'] == {'rolled_back': changed,
                                   'pending': REGIONS - changed,
                                   'total': REGIONS}
        assert set(_held(cloud).values()) == {'bs-old'}
    finally:
        permits, FleetDriver.permits = FleetDriver.permits, None
        if permits is not None:
            permits.release(REGIONS)        # none left waiting at the stop
        FleetDriver.delay = 0.2


def test_an_abort_leaves_no_target_gating(cloud):
    # The canary's gate is long: it is gating when the abort comes.
    rollout = _create(cloud, {'canary': 1, 'waves': ['100%'],
                              'gate_seconds': 3600})
    uuid = rollout['uuid']
    # Its canary programs first: ample time on a loaded machine.
    [canary] = cloud.wait_for(
        lambda: _targets(cloud, uuid, '&state=gating'), timeout=60)
    status, aborted = cloud.call('POST', '/v2/rollouts/%s/abort' % uuid)
    assert (status, aborted['state']) == (200, 'aborted')
    # At once, in the abort's transaction (issue 34: it stayed gating).
    [cut] = _targets(cloud, uuid, '&state=unverified')
    assert cut['target_uuid'] == canary['target_uuid']
    assert cut['reason'] == 'Its gate was cut short: the rollout was aborted.'
    assert 'gating' not in _show(cloud, uuid)['targets']
    # A rollback reverts it like a done target.
    status, back = cloud.call('POST', '/v2/rollouts/%s/rollback' % uuid)
    assert status == 200, back
    assert _ended(cloud, uuid)['targets'].get('rolled_back') == 1
    assert _held(cloud)[canary['target_uuid']] == 'bs-old'


def _settled(cloud, uuid):
    """The targets' counts once none is in progress (every operation a
    paused or aborted rollout had under way ended and was recorded)."""
    return cloud.wait_for(lambda: (lambda t: t if not t.get('in_progress')
                                   else None)(_show(cloud, uuid)['targets']),
                          20)


def test_notifications_and_bad_requests(cloud):
    from oslo_messaging.notify import _impl_test
    _impl_test.reset()
    rollout = _create(cloud, {'canary': 1, 'waves': ['100%']})
    _ended(cloud, rollout['uuid'])
    told = [m['payload']['state'] for _c, m, _p, _r in _impl_test.NOTIFICATIONS
            if m['event_type'] == 'accelerator.rollout.state.changed']
    assert told == ['running', 'succeeded']
    for body in ({'kind': 'driver', 'image': 'x'},
                 {'kind': 'bitstream'},
                 {'kind': 'bitstream', 'image': 'x',
                  'strategy': {'canary': '200%'}},
                 {'kind': 'bitstream', 'image': 'x',
                  'strategy': {'workloads': 'trample'}}):
        status, error = cloud.call('POST', '/v2/rollouts', body)
        assert status == 400, (body, error)
    status, error = cloud.call('POST', '/v2/rollouts', {
        'kind': 'bitstream', 'image': 'bs-new',
        'selector': {'hostnames': ['nowhere']}})
    assert status == 400 and 'matches no target' in str(error)
    # A catalog image must be an active bitstream.
    status, image = cloud.call('POST', '/v2/bitstreams', {'name': 'queued'})
    assert status == 201, image
    for dry_run in (True, False):
        status, error = cloud.call('POST', '/v2/rollouts', {
            'kind': 'bitstream', 'image': image['uuid'], 'dry_run': dry_run})
        assert status == 409 and 'queued' in str(error), error
    status, _ = cloud.call('GET', '/v2/rollouts/%s' % ('0' * 8 + '-0000-'
                                                       '0000-0000-' +
                                                       '0' * 12))
    assert status == 404
    status, _ = cloud.call('POST', '/v2/rollouts/%s/resume'
                           % rollout['uuid'])
    assert status == 409
    status, page = cloud.call('GET', '/v2/rollouts?state=succeeded')
    assert [r['uuid'] for r in page['rollouts']] == [rollout['uuid']]


def test_versioned_notifications_of_each_wave(cloud):
    from oslo_messaging.notify import _impl_test
    _impl_test.reset()
    rollout = _create(cloud, {'canary': 1, 'waves': ['100%']})
    _ended(cloud, rollout['uuid'])
    for event_type in ('rollout.wave.start', 'rollout.wave.end'):
        waves = notices.told(cloud, event_type, 2)
        assert [(w['rollout_uuid'], w['kind'], w['wave'], w['waves'])
                for w in waves] == [(rollout['uuid'], 'bitstream', 0, 1),
                                    (rollout['uuid'], 'bitstream', 1, 1)]
    assert notices.sent('rollout.rolled_back') == []


def test_a_versioned_notification_of_a_rollback(cloud):
    from oslo_messaging.notify import _impl_test
    _impl_test.reset()
    FleetDriver.failing = {HOSTS[0]: 'bs-new'}
    rollout = _create(cloud, {'canary': 1, 'waves': ['50%'],
                              'failure_budget': 5})
    assert _ended(cloud, rollout['uuid'])['state'] == 'failed'
    [back] = notices.told(cloud, 'rollout.rolled_back')
    assert (back['rollout_uuid'], back['state'], back['wave']) == (
        rollout['uuid'], 'failed', 0)
    assert back['reason'].startswith('The canary failed.')


def _firmware_of(cloud):
    """{device uuid: (firmware_version, status)} of the FPGAs."""
    found = {}
    for device in cloud.list_devices():
        info = device['vendor_board_info']
        info = json.loads(info) if isinstance(info, str) else info or {}
        found[device['uuid']] = (info.get('firmware_version'),
                                 device.get('status'))
    return found


def test_firmware_rollout_and_a_canary_flash_failure_rolled_back(cloud):
    fw1 = catalog_images.firmware(cloud, '{"version": "1.0"}\n')
    fw2 = catalog_images.firmware(cloud, '{"version": "2.0"}\n')
    first = _create(cloud, {'canary': 1, 'waves': ['100%'],
                            'max_unavailable': 5}, kind='firmware',
                    image=fw1)
    assert first['targets']['total'] == len(HOSTS)     # cards, not regions
    done = _ended(cloud, first['uuid'])
    assert (done['state'], done['targets']) == (
        'succeeded', {'done': len(HOSTS), 'total': len(HOSTS)})
    assert {v for v, _s in _firmware_of(cloud).values()} == {'1.0'}
    assert {t['target_kind'] for t in _targets(cloud, first['uuid'])} == \
        {'device'}

    FleetDriver.failing_firmware = {HOSTS[0]: '2.0'}
    second = _create(cloud, {'canary': 1, 'waves': ['100%'],
                             'max_unavailable': 5, 'failure_budget': 3},
                     kind='firmware', image=fw2)
    done = _ended(cloud, second['uuid'])
    assert done['state'] == 'failed'
    assert done['reason'].startswith('The canary failed.')
    assert 'authentication of the image failed' in done['reason']
    [canary] = _targets(cloud, second['uuid'], '&wave=0')
    assert (canary['state'], canary['last_known_good'],
            canary['applied']) == ('rolled_back', fw1, fw2)
    assert len(_targets(cloud, second['uuid'], '&state=pending')) == \
        len(HOSTS) - 1
    firmware = _firmware_of(cloud)
    # Every card holds 1.0: the canary flashed back, the others untouched;
    # the canary stays drained after its failed flash, for an operator.
    assert {v for v, _s in firmware.values()} == {'1.0'}
    assert firmware[canary['target_uuid']][1] == 'maintaining'
    assert [s for u, (_v, s) in firmware.items()
            if u != canary['target_uuid']] == ['enabled'] * (len(HOSTS) - 1)
    # Region-only selectors and bitstreams are refused for firmware.
    for body in ({'selector': {'deployable_names': ['region0']}},
                 {'image': 'bs-new'}):
        status, error = cloud.call('POST', '/v2/rollouts', dict(
            {'kind': 'firmware', 'image': fw2}, **body))
        assert status in (400, 404), error


# Driver rollouts: a driver family's version on hosts, through the driver
# operations. Every agent runs the stand-in playbooks (tests/playbooks/);
# in one process they share one "driver" directory, so the fake driver of
# every host sees the GPUs while nvidia's file is there, but each host's
# record of its version is its own (written from its operations' results).
PLAYBOOKS = os.path.join(os.path.dirname(__file__), '..', 'playbooks')


@pytest.fixture
def driver_cloud(tmp_path, monkeypatch):
    drivers = cloud_module.installed_drivers(tmp_path, monkeypatch)
    inventory = cloud_module.nvidia_family_inventory(tmp_path)
    cloud = cloud_module.Cloud(str(inventory), overrides={
        ('rollouts', 'interval'): 0.1,
        ('agent', 'playbook_dir'): os.path.abspath(PLAYBOOKS),
        ('agent', 'playbook_timeout'): 120,
        ('agent', 'playbook_progress_interval'): 0.2,
        ('agent', 'heartbeat_interval'): 1,
        ('fake_driver', 'driver_state_dir'): str(drivers),
    }).start()
    try:
        for host in HOSTS[1:]:
            agent = agent_service.AgentService(
                CONF, host=host, drivers={'fake': fake.FakeDriver(CONF)})
            agent.start()
            cloud.services.append(agent)
        cloud.wait_for(lambda: all(
            cloud.call('GET', '/v2/hosts/%s' % h)[1].get('agent_version')
            == '1.2' for h in HOSTS))
        cloud.drivers = drivers
        yield cloud
    finally:
        cloud.stop()


def _host(cloud, hostname):
    status, host = cloud.call('GET', '/v2/hosts/%s' % hostname)
    assert status == 200, host
    return host


def _versions(cloud):
    return [_host(cloud, h)['driver_versions'].get('nvidia') for h in HOSTS]


def _driver_rollout(cloud, version, strategy, **extra):
    body = dict({'kind': 'driver', 'driver': 'nvidia', 'version': version,
                 'selector': {'device_type': 'GPU'}, 'strategy': strategy},
                **extra)
    status, rollout = cloud.call('POST', '/v2/rollouts', body)
    assert status == (200 if body.get('dry_run') else 201), rollout
    return rollout


def _driver_operations(uuid):
    """(type, hostname, start, end) of the driver operations a rollout
    ran, in start order."""
    from cyborg_like.db import api as db_api
    from cyborg_like.db import models
    from cyborg_like.db import rollouts as rollout_db
    ops = {u: (s, e) for u, _t, s, e in rollout_db.ended_operations(uuid)}
    with db_api.reader() as session:
        rows = session.query(models.Operation).filter(
            models.Operation.uuid.in_(list(ops))).all()
        return sorted(((o.type, o.hostname) + ops[o.uuid] for o in rows),
                      key=lambda r: r[2])


@pytest.mark.long     # playbook runs on five hosts, wave by wave
def test_driver_rollout_canary_then_waves_to_every_host(driver_cloud):
    cloud = driver_cloud
    plan = _driver_rollout(cloud, '2.0', {'canary': 1, 'waves': [2]},
                           dry_run=True)
    assert [(w['wave'], w['targets'], w['hosts']) for w in plan['waves']] \
        == [(0, 1, 1), (1, 2, 2), (2, 2, 2)]
    rollout = _driver_rollout(cloud, '2.0', {
        'canary': 1, 'waves': [2], 'max_unavailable': 2})
    assert (rollout['kind'], rollout['driver'], rollout['version'],
            rollout['image']) == ('driver', 'nvidia', '2.0', 'nvidia=2.0')
    assert rollout['targets'] == {'pending': 5, 'total': 5}
    done = _ended(cloud, rollout['uuid'], timeout=120)
    assert (done['state'], done['targets']) == (
        'succeeded', {'done': 5, 'total': 5}), done
    assert _versions(cloud) == ['2.0'] * 5
    targets = _targets(cloud, rollout['uuid'])
    assert [(t['target_kind'], t['target_uuid'], t['wave'],
             t['last_known_good'], t['applied']) for t in targets] == [
        ('host', h, w, None, '2.0')
        for h, w in zip(sorted(HOSTS), [0, 1, 1, 2, 2])]
    # Install operations (no version recorded before), one per host, the
    # canary's ended before any other began, never more than 2 at once,
    # waves in order.
    ops = _driver_operations(rollout['uuid'])
    assert sorted(h for _t, h, _s, _e in ops) == sorted(HOSTS)
    assert {t for t, _h, _s, _e in ops} == {'driver_install'}
    canary = [o for o in ops if o[1] == targets[0]['hostname']][0]
    assert all(s >= canary[3] for _t, h, s, _e in ops if h != canary[1])
    assert _most_at_once([(s, e) for _t, _h, s, e in ops]) <= 2
    wave_of = {t['hostname']: t['wave'] for t in targets}
    for _t, h, s, _e in ops:
        assert all(e <= s for _t2, h2, _s2, e in ops
                   if wave_of[h2] < wave_of[h]), (h, ops)
    # The GPUs are back in service on every host.
    assert not _host(cloud, HOSTS[0])['drained_devices']


@pytest.mark.long     # playbook runs on five hosts, wave by wave
def test_driver_canary_failure_stops_and_rolls_back(driver_cloud):
    cloud = driver_cloud
    first = _driver_rollout(cloud, '2.0', {'canary': 1, 'waves': ['100%'],
                                           'max_unavailable': 5})
    assert _ended(cloud, first['uuid'], timeout=120)['state'] == 'succeeded'
    assert _versions(cloud) == ['2.0'] * 5
    # 3.0 fails to load on the canary's host only.
    canary_host = sorted(HOSTS)[0]
    (cloud.drivers / 'behaviour.json').write_text(json.dumps({
        'fail_task': 'Load the driver', 'fail_hosts': [canary_host],
        'fail_versions': ['3.0'],
        'fail_message': 'nvidia.ko: Unknown symbol'}))
    second = _driver_rollout(cloud, '3.0', {
        'canary': 1, 'waves': ['100%'], 'max_unavailable': 5,
        'failure_budget': 3}, selector={'current_version': '2.0'})
    assert second['targets']['total'] == 5
    done = _ended(cloud, second['uuid'], timeout=120)
    assert done['state'] == 'failed', done
    assert done['reason'].startswith('The canary failed.')
    assert canary_host in done['reason']
    assert 'nvidia.ko: Unknown symbol' in done['reason']
    [canary] = _targets(cloud, second['uuid'], '&wave=0')
    assert (canary['hostname'], canary['state'], canary['last_known_good'],
            canary['applied']) == (canary_host, 'rolled_back', '2.0', '3.0')
    assert 'Load the driver' in canary['reason']
    assert len(_targets(cloud, second['uuid'], '&state=pending')) == 4
    # Only the canary's host was touched: its upgrade to 3.0 that failed,
    # then the upgrade back to 2.0; every host is at 2.0 again and the
    # canary's GPUs are back in service (the rollback's operation
    # succeeded over the failed one's drain).
    ops = _driver_operations(second['uuid'])
    assert [(t, h) for t, h, _s, _e in ops] == [
        ('driver_upgrade', canary_host), ('driver_upgrade', canary_host)]
    assert _versions(cloud) == ['2.0'] * 5
    assert not _host(cloud, canary_host)['drained_devices']


def _operation_requests(uuid):
    """(type, hostname, parameters, timeout) of the driver operations a
    rollout ran, in the order they were started."""
    from cyborg_like.db import api as db_api
    from cyborg_like.db import models
    from cyborg_like.db import rollouts as rollout_db
    uuids = [u for u, _t, _s, _e in rollout_db.ended_operations(uuid)]
    with db_api.reader() as session:
        rows = session.query(models.Operation).filter(
            models.Operation.uuid.in_(uuids)).all()
        rows.sort(key=lambda o: (o.created_at, o.hostname))
        return [(o.type, o.hostname, json.loads(o.params)['parameters'],
                 json.loads(o.params).get('timeout')) for o in rows]


@pytest.mark.long     # playbook runs on five hosts, wave by wave
def test_driver_rollout_parameters_reach_every_operation(driver_cloud):
    cloud = driver_cloud
    repository = 'deb https://example.invalid/nvidia bookworm main'
    first = _driver_rollout(cloud, '2.0', {'canary': 1, 'waves': ['100%'],
                                           'max_unavailable': 5},
                            parameters={'apt_repository': repository,
                                        'vgpu_manager': True},
                            timeout=900)
    assert (first['parameters'], first['timeout']) == (
        {'apt_repository': repository, 'vgpu_manager': True}, 900)
    assert _ended(cloud, first['uuid'], timeout=120)['state'] == 'succeeded'
    assert sorted(_operation_requests(first['uuid']),
                  key=lambda r: r[1]) == [
        ('driver_install', h, {'apt_repository': repository,
                               'vgpu_manager': True, 'version': '2.0'}, 900)
        for h in sorted(HOSTS)]
    # A .deb names one version's package: the canary's failed upgrade to
    # 3.0 gets it, the rollback's upgrade back to 2.0 does not (the other
    # parameters stay).
    canary_host = sorted(HOSTS)[0]
    (cloud.drivers / 'behaviour.json').write_text(json.dumps({
        'fail_task': 'Load the driver', 'fail_hosts': [canary_host],
        'fail_versions': ['3.0']}))
    second = _driver_rollout(cloud, '3.0', {'canary': 1, 'waves': ['100%']},
                             parameters={'deb_path': '/srv/nvidia-3.0.deb',
                                         'package': 'nvidia-driver'})
    assert second['timeout'] is None
    assert _ended(cloud, second['uuid'], timeout=120)['state'] == 'failed'
    assert _operation_requests(second['uuid']) == [
        ('driver_upgrade', canary_host,
         {'deb_path': '/srv/nvidia-3.0.deb', 'package': 'nvidia-driver',
          'version': '3.0'}, None),
        ('driver_upgrade', canary_host,
         {'package': 'nvidia-driver', 'version': '2.0'}, None)]
    assert _versions(cloud) == ['2.0'] * 5


def test_driver_rollout_refusals(driver_cloud):
    cloud = driver_cloud
    for body in (
            {'kind': 'driver', 'driver': 'nvidia'},             # no version
            {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
             'image': 'bs-new'},
            {'kind': 'driver', 'driver': 'amd', 'version': '2.0'},
            {'kind': 'bitstream', 'image': 'bs-new', 'version': '2.0'},
            {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
             'selector': {'deployable_names': ['region0']}},
            {'kind': 'bitstream', 'image': 'bs-new',
             'selector': {'current_version': '1.0'}},
            {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
             'selector': {'hostnames': ['nowhere']}},
            # Parameters and timeout are driver rollouts' own, checked
            # against the family's schema; the version is the rollout's.
            {'kind': 'bitstream', 'image': 'bs-new',
             'parameters': {'package': 'x'}},
            {'kind': 'bitstream', 'image': 'bs-new', 'timeout': 60},
            {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
             'parameters': {'version': '3.0'}},
            {'kind': 'driver', 'driver': 'opae', 'version': '2.0',
             'parameters': {'vgpu_manager': True}},
            {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
             'parameters': {'deb_path': 'relative.deb'}},
            {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
             'parameters': {'deb_path': '/a.deb', 'apt_repository':
                            'deb https://example.invalid/r x main'}},
            {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
             'timeout': 0}):
        status, error = cloud.call('POST', '/v2/rollouts', body)
        assert status == 400, (body, error)
    status, page = cloud.call('GET', '/v2/rollouts?kind=driver')
    assert (status, page['rollouts']) == (200, [])


def _bind_gpu(cloud, host, instance):
    """An ARQ bound to a GPU of ``host`` (a device of the nvidia family):
    the ARQ's uuid."""
    api = cloud.conductor_api
    if not api.list_device_profiles(ADMIN, ['gpu'], 10, None, 'created_at',
                                    'asc'):
        api.create_device_profile(ADMIN, 'gpu', [{'resources:PGPU': '1'}],
                                  None)
    devices = {d['id']: d for d in cloud.list_devices()}
    gpu = next(d for d in cloud.conductor_api.list_deployables(
        ADMIN, {}, 1000, None, 'created_at', 'asc')
        if devices.get(d['device_id'], {}).get('hostname') == host
        and devices[d['device_id']]['type'] == 'GPU')
    arq = api.create_arqs(ADMIN, 'gpu', None)[0]['uuid']
    api.bind_arqs(ADMIN, {arq: {
        'hostname': host, 'device_rp_uuid': gpu['rp_uuid'],
        'instance_uuid': instance, 'project_id': None}})
    cloud.wait_for(lambda: api.get_arq(ADMIN, arq)['state'] == 'Bound')
    return arq


@pytest.mark.long     # playbook runs on five hosts, wave by wave
def test_driver_rollout_includes_busy_hosts_only_when_told(driver_cloud):
    cloud = driver_cloud
    busy = HOSTS[2]
    arq = _bind_gpu(cloud, busy, '10000000-0000-0000-0000-00000000000a')
    before = _host(cloud, busy)['driver_versions'].get('nvidia')
    skipping = _driver_rollout(cloud, '2.0', {
        'canary': 0, 'waves': ['100%'], 'max_unavailable': 5})
    done = _ended(cloud, skipping['uuid'], timeout=120)
    assert done['targets'] == {'done': 4, 'skipped_busy': 1, 'total': 5}
    assert _host(cloud, busy)['driver_versions'].get('nvidia') == before
    # Told to include them: the busy host's operation is forced over the
    # bound request, which the operation records; the workload keeps it.
    including = _driver_rollout(cloud, '2.0', {
        'canary': 0, 'waves': ['100%'], 'max_unavailable': 5,
        'workloads': 'include'}, selector={'hostnames': [busy]})
    done = _ended(cloud, including['uuid'], timeout=120)
    assert (done['state'], done['targets']) == (
        'succeeded', {'done': 1, 'total': 1}), done
    assert _host(cloud, busy)['driver_versions']['nvidia'] == '2.0'
    from cyborg_like.db import operations as operation_db
    [target] = _targets(cloud, including['uuid'])
    forced = operation_db.get(target['operation_uuid'])
    assert forced['params']['forced_over'] == [arq], forced
    assert cloud.conductor_api.get_arq(ADMIN, arq)['state'] == 'Bound'
    # Programming and flashing refuse a region or card in use, whatever
    # asks: include is for driver rollouts only.
    status, error = cloud.call('POST', '/v2/rollouts', {
        'kind': 'bitstream', 'image': 'bs-new',
        'strategy': {'workloads': 'include'}})
    assert status == 400, error
