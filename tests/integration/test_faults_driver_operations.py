"""Driver operations with real processes over RabbitMQ and MariaDB /
PostgreSQL, and the agent killed with SIGKILL in the middle of one.

The agent runs the stand-in playbooks (tests/playbooks/README.md) through
ansible-runner; the fake driver reports the GPU only while the stand-in
"driver" file exists, with its version as an attribute. After the agent
is killed mid-playbook the liveness sweep fails the operation within the
host's down bound and the GPU stays drained, with the reason, across the
agent's restart, until a verify succeeds. A driver rollout whose owner
conductor is killed while a host's playbook runs is taken over, and the
operation, which the agent carries, ends by its report to the other
conductor: nothing is failed or run twice.
"""

import copy
import json
import os
import time

import pytest

from .infra import BACKENDS
from .infra import BASE_INVENTORY
from .infra import CONDUCTOR_BOUND
from .infra import HOST_BOUND
from .infra import LIVENESS
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

PLAYBOOKS = os.path.join(os.path.dirname(__file__), '..', 'playbooks')
TERMINAL = ('succeeded', 'failed', 'cancelled')


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('drivers-%s' % request.param))
    drivers = os.path.join(workdir, 'drivers')
    os.mkdir(drivers)
    with open(os.path.join(drivers, 'nvidia.version'), 'w') as f:
        f.write('1.0\n')
    inventory = copy.deepcopy(BASE_INVENTORY)
    for device in inventory['devices']:
        if device['vendor'] == '0x10de':
            device['driver_family'] = 'nvidia'
    with running_deployment(
            request.param, workdir, inventory=inventory, conductors=2,
            extra_config=LIVENESS + '[rollouts]\ninterval = 0.5\n',
            agent_config=(
                '[agent]\nplaybook_dir = %s\nplaybook_progress_interval = '
                '0.5\nheartbeat_interval = 1\n[fake_driver]\n'
                'driver_state_dir = %s\n' % (os.path.abspath(PLAYBOOKS),
                                             drivers)),
            agent_env={'CYBORG_LIKE_TEST_DRIVERS': drivers},
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        dep.wait_host_up()
        dep.drivers = drivers
        wait_for(lambda: _host(dep)['agent_version'] == '1.2', timeout=30)
        yield dep


def _host(dep):
    return dep.call('GET', '/v2/hosts/%s' % dep.host).json()


def _start(dep, behaviour=None, **request):
    with open(os.path.join(dep.drivers, 'behaviour.json'), 'w') as f:
        json.dump(behaviour or {}, f)
    return dep.call('POST', '/v2/hosts/%s/driver_operations' % dep.host,
                    request, 202).json()


def _operation(dep, uuid):
    return dep.call('GET', '/v2/operations/%s' % uuid).json()


def _ended(dep, uuid, timeout=90):
    return wait_for(lambda: (lambda o: o if o['state'] in TERMINAL
                             else None)(_operation(dep, uuid)),
                    timeout=timeout,
                    message='driver operation %s did not end' % uuid)


def _gpu_version(dep):
    """The GPU's driver_version attribute, as the API shows it."""
    [gpu] = [d for d in dep.list_ok('deployables') if d['name'] == 'gpu0']
    attributes = dict(kv for a in json.loads(gpu['attributes_list'])
                      for kv in a.items())
    return attributes.get('driver_version')


def test_upgrade_streams_progress_and_rediscovers(deployment):
    dep = deployment
    # 1.0 as installed, or what another test of the module left (any
    # order): only this test installs 2.0.
    assert _gpu_version(dep) not in (None, '2.0')
    operation = _start(dep, {'sleep_seconds': 3}, action='upgrade',
                       family='nvidia', version='2.0')
    uuid = operation['uuid']
    # Events arrive while the playbook runs, not only at its end.
    running = wait_for(lambda: (lambda o: o if o['state'] == 'running' and
                                (o['progress'] or {}).get('task') ==
                                'Unload the driver' else None)(
        _operation(dep, uuid)), timeout=60,
        message='no progress while the playbook ran')
    assert running['progress']['counts']['started'] >= 1
    assert [d['drained_by'] for d in _host(dep)['drained_devices']] == [uuid]
    done = _ended(dep, uuid)
    assert done['state'] == 'succeeded', done
    assert done['result']['versions']['version_after'] == '2.0'
    assert _host(dep)['driver_versions'] == {'nvidia': '2.0'}
    assert _host(dep)['drained_devices'] == []
    assert _gpu_version(dep) == '2.0'


def test_sigkill_agent_mid_playbook(deployment):
    dep = deployment
    operation = _start(dep, {'sleep_seconds': 60}, action='install',
                       family='nvidia', version='3.0')
    uuid = operation['uuid']
    wait_for(lambda: (_operation(dep, uuid)['progress'] or {}).get('task')
             == 'Unload the driver', timeout=60,
             message='the playbook never reached its long task')
    dep.services['agent'].kill()
    started = time.monotonic()
    ended = _ended(dep, uuid, timeout=HOST_BOUND)
    print('agent SIGKILL mid-playbook: operation failed after %.1fs'
          % (time.monotonic() - started))
    assert ended['state'] == 'failed'
    assert 'went down' in ended['detail']
    [drained] = _host(dep)['drained_devices']
    assert drained['drained_by'] == uuid
    assert 'went down' in drained['reason']

    # Back, the agent does not return the GPU to service by itself: not
    # by its beats, nor by its first inventory report, once applied.
    agent = dep.services['agent']
    restarted_at = agent.log_size()
    agent.start()
    dep.wait_host_up()
    wait_for(lambda: 'Reported ' in agent.read_log(restarted_at),
             timeout=HOST_BOUND,
             message='the agent reported no inventory after its restart')
    assert [d['drained_by'] for d in _host(dep)['drained_devices']] == [uuid]
    verified = _ended(dep, _start(dep, action='verify',
                                  family='nvidia')['uuid'])
    assert verified['state'] == 'succeeded', verified
    assert _host(dep)['drained_devices'] == []


def test_rollout_owner_killed_while_a_playbook_runs(deployment):
    dep = deployment
    with open(os.path.join(dep.drivers, 'behaviour.json'), 'w') as f:
        json.dump({'sleep_seconds': 8}, f)
    rollout = dep.call('POST', '/v2/rollouts', {
        'kind': 'driver', 'driver': 'nvidia', 'version': '4.0',
        'parameters': {'package': 'nvidia-driver'}, 'timeout': 300,
        'strategy': {'canary': 1}}, 201).json()
    uuid = rollout['uuid']
    [target] = dep.call('GET', '/v2/rollouts/%s/targets' % uuid).json()[
        'targets']
    operation = wait_for(
        lambda: (lambda t: t['operation_uuid'] if t['state'] ==
                 'in_progress' and t['operation_uuid'] and _operation(
                     dep, t['operation_uuid'])['state'] == 'running'
                 else None)(dep.call('GET', '/v2/rollouts/%s/targets'
                                     % uuid).json()['targets'][0]),
        timeout=60, message='the host\'s playbook never started')
    owner = dep.owner('rollouts', uuid)
    assert owner == dep.owner('operations', operation)
    dep.services[owner].kill()
    killed = time.monotonic()
    try:
        wait_for(lambda: dep.owner('rollouts', uuid) not in (None, owner),
                 timeout=CONDUCTOR_BOUND, interval=0.1,
                 message='no conductor took the rollout over')
        print('driver rollout taken over %.1fs after its owner was killed'
              % (time.monotonic() - killed))
        done = wait_for(lambda: (lambda r: r if r['state'] != 'running'
                                 else None)(dep.call(
                                     'GET', '/v2/rollouts/%s' % uuid).json()),
                        timeout=120, message='the rollout never ended')
    finally:
        dep.services[owner].start()
    assert (done['state'], done['targets']) == (
        'succeeded', {'done': 1, 'total': 1}), done
    [target] = dep.call('GET', '/v2/rollouts/%s/targets' % uuid).json()[
        'targets']
    # The playbook the killed conductor started ran once, to its end.
    assert (target['operation_uuid'], target['attempts']) == (operation, 1)
    ended = _operation(dep, operation)
    assert ended['state'] == 'succeeded', ended
    assert ended['result']['versions']['version_after'] == '4.0'
    assert _host(dep)['driver_versions'] == {'nvidia': '4.0'}
    assert _host(dep)['drained_devices'] == []
