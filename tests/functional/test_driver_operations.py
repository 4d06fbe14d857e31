"""Driver operations end to end through the API: the real agent runs the
stand-in playbooks (tests/playbooks/README.md) through ansible-runner on
this host,
the fake accelerator driver sees the "driver" they install, the conductor
drains and returns the devices. Nothing of ours is mocked."""

import json
import os

import pytest

from cyborg_like.common import context
from cyborg_like.common import states
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
PLAYBOOKS = os.path.join(os.path.dirname(__file__), '..', 'playbooks')
HOST = cloud_module.HOST
PATH = '/v2/hosts/%s/driver_operations' % HOST
TERMINAL = (states.SUCCEEDED, states.FAILED, states.CANCELLED)


@pytest.fixture
def drivers(tmp_path, monkeypatch):
    return cloud_module.installed_drivers(tmp_path, monkeypatch)


@pytest.fixture
def cloud(tmp_path, drivers):
    inventory = cloud_module.nvidia_family_inventory(tmp_path)
    cloud = cloud_module.Cloud(str(inventory), overrides={
        ('agent', 'playbook_dir'): os.path.abspath(PLAYBOOKS),
        ('agent', 'playbook_timeout'): 120,
        ('agent', 'playbook_progress_interval'): 0.2,
        ('agent', 'heartbeat_interval'): 1,
        ('fake_driver', 'driver_state_dir'): str(drivers),
    }).start()
    try:
        cloud.wait_for(lambda: _host(cloud)['agent_version'] == '1.2')
        yield cloud
    finally:
        cloud.stop()


def _host(cloud):
    status, body = cloud.call('GET', '/v2/hosts/%s' % HOST)
    assert status == 200, body
    return body


def _start(cloud, drivers, expect=202, behaviour=None, **request):
    """``behaviour``: how the stand-in playbook behaves this time."""
    (drivers / 'behaviour.json').write_text(json.dumps(behaviour or {}))
    status, body = cloud.call('POST', PATH, request)
    assert status == expect, body
    return body


def _error(body):
    return json.loads(body['error_message'])


def _operation(cloud, uuid):
    status, body = cloud.call('GET', '/v2/operations/%s' % uuid)
    assert status == 200, body
    return body


def _ended(cloud, uuid, timeout=60):
    def ended():
        operation = _operation(cloud, uuid)
        return operation if operation['state'] in TERMINAL else None
    return cloud.wait_for(ended, timeout=timeout)


def _gpus(cloud):
    return [d for d in cloud.list_devices() if d['vendor'] == '0x10de']


def _gpu_versions(cloud):
    deployables = cloud.conductor_api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc')
    ids = {d['id'] for d in _gpus(cloud)}
    return sorted(dict(kv for a in json.loads(d['attributes_list'])
                       for kv in a.items()).get('driver_version')
                  for d in deployables if d['device_id'] in ids)


def test_upgrade_reports_progress_versions_and_rediscovers(cloud, drivers):
    assert _gpu_versions(cloud) == ['1.0', '1.0']
    operation = _start(cloud, drivers, action='upgrade', family='nvidia',
                       version='2.0', behaviour={'sleep_seconds': 1})
    assert operation['type'] == 'driver_upgrade'
    assert operation['hostname'] == HOST
    assert operation['params']['parameters'] == {'version': '2.0'}

    # While it runs, the GPUs are drained and events arrive.
    drained = cloud.wait_for(lambda: _host(cloud)['drained_devices'])
    assert {d['uuid'] for d in drained} == {g['uuid'] for g in _gpus(cloud)}
    running = cloud.wait_for(lambda: (lambda o: o if o['progress'] and
                             o['progress'].get('events') and
                             o['state'] == 'running' else None)(
        _operation(cloud, operation['uuid'])))
    assert running['progress']['counts'].get('started', 0) >= 1

    done = _ended(cloud, operation['uuid'])
    assert done['state'] == 'succeeded', done
    assert done['result']['versions'] == {
        'family': 'nvidia', 'action': 'upgrade', 'version_before': '1.0',
        'version_after': '2.0', 'devices_seen': None,
        'reboot_required': False}
    assert done['result']['recap']['failures'] == 0
    assert done['result']['recap']['changed'] >= 1
    tasks = [e['task'] for e in done['progress']['events']
             if e['event'] == 'started']
    assert 'Install the driver package' in tasks
    assert (drivers / 'nvidia.version').read_text() == '2.0\n'
    # Re-discovered before it ended; back in service; the host knows.
    assert _gpu_versions(cloud) == ['2.0', '2.0']
    host = _host(cloud)
    assert host['drained_devices'] == []
    assert host['driver_versions'] == {'nvidia': '2.0'}
    listed = cloud.call('GET', '/v2/hosts')[1]['hosts']
    assert listed[0]['driver_versions'] == {'nvidia': '2.0'}


def test_remove_then_install_changes_what_is_discovered(cloud, drivers):
    removed = _ended(cloud, _start(cloud, drivers, action='remove',
                                   family='nvidia')['uuid'])
    assert removed['state'] == 'succeeded', removed
    assert _gpus(cloud) == []
    assert _host(cloud)['driver_versions'] == {}
    installed = _ended(cloud, _start(cloud, drivers, action='install',
                                     family='nvidia', version='3.1')['uuid'])
    assert installed['state'] == 'succeeded', installed
    assert _gpu_versions(cloud) == ['3.1', '3.1']


def test_failure_keeps_the_devices_drained_until_verify(cloud, drivers):
    operation = _start(cloud, drivers, action='install', family='nvidia',
                       version='2.0', behaviour={
                           'fail_task': 'Load the driver',
                           'fail_message': 'nvidia.ko: Unknown symbol'})
    failed = _ended(cloud, operation['uuid'])
    assert failed['state'] == 'failed'
    assert 'Load the driver' in failed['detail']
    assert 'nvidia.ko: Unknown symbol' in failed['detail']
    assert failed['result']['failed_task']['name'] == 'Load the driver'
    drained = _host(cloud)['drained_devices']
    assert len(drained) == 2
    assert all('Load the driver' in d['reason'] for d in drained)
    # Not bindable while drained.
    arq = _bind_gpu(cloud, 'A100')
    assert arq['state'] == states.BIND_FAILED
    assert 'drained' in arq['state_reason']

    verified = _ended(cloud, _start(cloud, drivers, action='verify',
                                    family='nvidia')['uuid'])
    assert verified['state'] == 'succeeded', verified
    assert _host(cloud)['drained_devices'] == []
    assert _bind_gpu(cloud, 'A100', '10000000-0000-0000-0000-000000000009'
                     )['state'] == states.BOUND


def _sessions_running(uuid):
    """The sessions of the processes whose command line names operation
    ``uuid`` (Ansible's workers), other than this test's own."""
    sessions = set()
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                if uuid.encode() in f.read():
                    sessions.add(os.getsid(int(pid)))
        except OSError:
            continue
    return sessions - {os.getsid(0)}


def _alive_in(sessions):
    """Pids of the running processes of ``sessions`` (killed ones stay
    as zombies until init reaps them: they run nothing)."""
    alive = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/stat' % pid) as f:
                state = f.read().rsplit(')', 1)[1].split()[0]
            if state != 'Z' and os.getsid(int(pid)) in sessions:
                alive.append(int(pid))
        except OSError:
            continue
    return alive


def test_cancel_mid_run_keeps_the_devices_drained(cloud, drivers):
    operation = _start(cloud, drivers, action='install', family='nvidia',
                       version='2.0', behaviour={'sleep_seconds': 30})
    uuid = operation['uuid']
    cloud.wait_for(lambda: (_operation(cloud, uuid)['progress'] or {}).get(
        'task') == 'Unload the driver', timeout=30)
    # The task that sleeps runs in a session of Ansible's own.
    workers = _sessions_running(uuid)
    assert workers
    status, body = cloud.call('POST', '/v2/operations/%s/cancel' % uuid)
    assert status == 202, body
    assert body['state'] == states.CANCELLING
    ended = _ended(cloud, uuid, timeout=20)
    assert ended['state'] == states.CANCELLED
    assert 'Unload the driver' in ended['detail']
    assert ended['result']['status'] == 'canceled'
    assert len(_host(cloud)['drained_devices']) == 2
    # Nothing of the run goes on changing the host once it has ended.
    assert _alive_in(workers) == []
    # An ended operation is not cancelled again.
    status, body = cloud.call('POST', '/v2/operations/%s/cancel' % uuid)
    assert status == 409
    assert _error(body)['error_code'] == 'accel.operation.not_cancellable'


def test_a_running_playbook_outlives_its_conductor(cloud, drivers):
    """Once its playbook runs, a driver operation is the agent's: the
    sweep does not fail it when the conductor that started it stops (the
    agent reports the end to any conductor), and it succeeds."""
    import sqlalchemy as sa

    from cyborg_like.db import api as db_api
    from cyborg_like.db import models
    operation = _start(cloud, drivers, action='upgrade', family='nvidia',
                       version='2.0', behaviour={'sleep_seconds': 3})
    uuid = operation['uuid']
    cloud.wait_for(lambda: _operation(cloud, uuid)['state'] ==
                   states.RUNNING, timeout=30)
    with db_api.writer() as session:
        session.execute(sa.update(models.Operation).where(
            models.Operation.uuid == uuid).values(
                conductor_uuid='dead0000-0000-4000-8000-000000000000'))
    cloud.services[0].manager._fail_interrupted_work()
    assert _operation(cloud, uuid)['state'] == states.RUNNING
    ended = _ended(cloud, uuid, timeout=60)
    assert ended['state'] == states.SUCCEEDED, ended
    assert _host(cloud)['drained_devices'] == []


def test_a_pending_one_whose_conductor_stopped_is_failed(cloud, drivers):
    """Accepted but not yet started (its conductor's worker would have
    started the playbook): nobody will, so the sweep fails it."""
    from cyborg_like.db import driver_operations
    operation, _job = driver_operations.start(
        HOST, {'family': 'nvidia', 'action': 'upgrade',
               'parameters': {'version': '2.0'}}, 'p1',
        'dead0000-0000-4000-8000-000000000000')
    cloud.services[0].manager._fail_interrupted_work()
    failed = _operation(cloud, operation['uuid'])
    assert failed['state'] == states.FAILED
    assert 'its conductor stopped' in failed['detail']


def test_timeout_fails_the_operation(cloud, drivers):
    operation = _start(cloud, drivers, action='install', family='nvidia',
                       version='2.0', timeout=3,
                       behaviour={'sleep_seconds': 30})
    ended = _ended(cloud, operation['uuid'], timeout=30)
    assert ended['state'] == states.FAILED
    assert ended['detail'].startswith('The playbook timed out')
    # No worker of the run is left (the sleeping task's would be).
    assert _sessions_running(operation['uuid']) == set()
    assert ended['result']['status'] == 'timeout'
    assert len(_host(cloud)['drained_devices']) == 2


def test_one_driver_operation_per_host(cloud, drivers):
    first = _start(cloud, drivers, action='install', family='nvidia',
                   version='2.0', behaviour={'sleep_seconds': 2})
    body = _start(cloud, drivers, expect=409, action='verify',
                  family='opae')
    assert _error(body)['error_code'] == \
        'accel.host.driver_operation_in_progress'
    assert _ended(cloud, first['uuid'])['state'] == 'succeeded'


def _bind_gpu(cloud, model, instance='10000000-0000-0000-0000-000000000001'):
    api = cloud.conductor_api
    if not api.list_device_profiles(ADMIN, ['gpu'], 10, None, 'created_at',
                                    'asc'):
        api.create_device_profile(ADMIN, 'gpu', [{'resources:PGPU': '1'}],
                                  None)
    [arq] = api.create_arqs(ADMIN, 'gpu', None)
    device = next(d for d in _gpus(cloud) if d['model'] == model)
    deployable = next(d for d in api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc')
        if d['device_id'] == device['id'])
    api.bind_arqs(ADMIN, {arq['uuid']: {
        'hostname': HOST, 'device_rp_uuid': deployable['rp_uuid'],
        'instance_uuid': instance, 'project_id': None}})

    def resolved():
        found = api.get_arq(ADMIN, arq['uuid'])
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(resolved)


def test_bound_requests_refuse_the_operation(cloud, drivers):
    arq = _bind_gpu(cloud, 'T4')
    assert arq['state'] == states.BOUND
    body = _start(cloud, drivers, expect=409, action='upgrade',
                  family='nvidia', version='2.0')
    assert _error(body)['error_code'] == 'accel.host.devices_in_use'
    assert arq['uuid'] in _error(body)['faultstring']
    assert _host(cloud)['drained_devices'] == []
    # Another family's devices are not affected.
    other = _ended(cloud, _start(cloud, drivers, action='remove',
                                 family='xrt')['uuid'])
    assert other['state'] == 'succeeded', other


def test_wait_for_release_runs_once_the_requests_go(cloud, drivers):
    arq = _bind_gpu(cloud, 'T4')
    operation = _start(cloud, drivers, action='upgrade', family='nvidia',
                       version='2.0', wait_for_release=30)
    uuid = operation['uuid']
    waiting = cloud.wait_for(lambda: (_operation(cloud, uuid)['progress']
                                      or {}).get('task'))
    assert waiting.startswith('Waiting for the release of 1')
    assert _operation(cloud, uuid)['state'] == states.PENDING
    # Drained meanwhile: nothing new is bound to the GPUs.
    assert _bind_gpu(cloud, 'A100', '10000000-0000-0000-0000-000000000002'
                     )['state'] == states.BIND_FAILED
    cloud.conductor_api.unbind_arqs(ADMIN, [arq['uuid']])
    assert _ended(cloud, uuid)['state'] == states.SUCCEEDED


def test_wait_for_release_times_out_and_returns_the_devices(cloud, drivers):
    _bind_gpu(cloud, 'T4')
    operation = _start(cloud, drivers, action='upgrade', family='nvidia',
                       version='2.0', wait_for_release=1)
    ended = _ended(cloud, operation['uuid'])
    assert ended['state'] == states.FAILED
    assert 'still bound after 1 seconds' in ended['detail']
    assert _host(cloud)['drained_devices'] == []
    assert (drivers / 'nvidia.version').read_text() == '1.0\n'


def test_force_runs_and_records_the_bound_requests(cloud, drivers):
    arq = _bind_gpu(cloud, 'T4')
    operation = _start(cloud, drivers, action='upgrade', family='nvidia',
                       version='2.0', force=True)
    assert operation['params']['forced_over'] == [arq['uuid']]
    assert _ended(cloud, operation['uuid'])['state'] == states.SUCCEEDED


def test_bad_requests(cloud, drivers):
    for request in ({'action': 'install', 'family': 'nvidia'},
                    {'action': 'reboot', 'family': 'nvidia'},
                    {'action': 'verify', 'family': 'amd'},
                    {'action': 'install', 'family': 'nvidia',
                     'version': '1.0; rm -rf /'},
                    {'action': 'verify', 'family': 'nvidia',
                     'parameters': {'colour': 'red'}},
                    {'action': 'remove', 'family': 'nvidia',
                     'version': '1.0'},
                    {'action': 'install', 'family': 'nvidia',
                     'version': '1.0', 'parameters': {'version': '2.0'}}):
        status, body = cloud.call('POST', PATH, request)
        assert status == 400, (request, body)
    status, body = cloud.call('POST', '/v2/hosts/nowhere/driver_operations',
                              {'action': 'verify', 'family': 'nvidia'})
    assert status == 404
    assert _error(body)['error_code'] == 'accel.host.not_found'


def test_no_programming_while_drained_nor_driver_change_while_programming(
        cloud, drivers):
    """A drained FPGA is not programmed; an FPGA being programmed keeps a
    driver operation of its family out."""
    [region] = cloud.conductor_api.list_deployables(
        ADMIN, {'name': 'region0'}, 10, None, 'created_at', 'asc')
    failed = _ended(cloud, _start(cloud, drivers, action='verify',
                                  family='opae')['uuid'])
    assert failed['state'] == states.FAILED     # opae is not installed
    program = [{'op': 'replace', 'path': '/bitstream_id',
                'value': 'bs-crypto-1'}]
    status, body = cloud.call('PATCH', '/v2/deployables/%s/program'
                              % region['uuid'], program)
    assert status == 409, body
    assert 'drained' in _error(body)['faultstring']

    (drivers / 'opae.version').write_text('2.1.0\n')
    assert _ended(cloud, _start(cloud, drivers, action='verify',
                                family='opae')['uuid'])['state'] == \
        states.SUCCEEDED
    # A program that takes a few seconds (the fake driver sleeps).
    from cyborg_like.conf import CONF
    with open(os.path.join(CONF.agent.bitstream_dir, 'bs-slow'), 'w') as f:
        f.write('SLEEP 3\n')
    status, body = cloud.call('PATCH', '/v2/deployables/%s/program'
                              % region['uuid'], [dict(program[0],
                                                      value='bs-slow')])
    assert status == 202, body
    status, body = cloud.call('POST', PATH, {'action': 'verify',
                                             'family': 'opae'})
    assert status == 409, body
    assert 'under way' in _error(body)['faultstring']
