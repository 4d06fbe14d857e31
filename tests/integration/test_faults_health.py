"""Health drains when conductors die (fault injection).

Two conductors, an agent and the API as real processes over RabbitMQ and
MariaDB/PostgreSQL. A conductor accepts a heartbeat at once and writes it
with others [conductor] heartbeat_flush_interval later, so a heartbeat
saying a device failed can die with the conductor holding it. Nothing
depends on that one heartbeat: the agent says it again every second, the
next conductor to write it drains the device, and with both conductors
writing the beats of one host, the device is drained once (one drain in
health_drains, the circuit breaker's count) and returned to service once.
"""

import copy
import time

import pytest
import sqlalchemy as sa

from .infra import BACKENDS
from .infra import BASE_INVENTORY
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

FLUSH_SECONDS = 3
# Long enough that no periodic flush comes while the test holds a beat
# unwritten: where a flush falls is otherwise up to the two conductors'
# start times.
HOLDING_FLUSH_SECONDS = 600
CONFIG = """
[conductor]
service_heartbeat_interval = 1
service_down_after = 3
heartbeat_flush_interval = %d

[health]
recovery_checks = 3
"""
# The agent beats every second; a restarted conductor writes what it got
# within a flush interval; the margin covers a loaded 2-core CI machine.
DRAIN_BOUND = 1 + FLUSH_SECONDS + 8
GPU_REASON = 'Xid 79 (GPU has fallen off the bus)'


def _inventory(gpu_healthy):
    document = copy.deepcopy(BASE_INVENTORY)
    gpu = next(d for d in document['devices'] if d['type'] == 'GPU')
    gpu['health'] = {'healthy': gpu_healthy,
                     'reasons': [] if gpu_healthy else [GPU_REASON]}
    return document


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('health-%s' % request.param))
    with running_deployment(
            request.param, workdir, conductors=2,
            extra_config=CONFIG % FLUSH_SECONDS,
            inventory=_inventory(gpu_healthy=True),
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        dep.wait_host_up()
        yield dep


def _gpu(dep):
    with dep.engine.connect() as conn:
        return conn.execute(sa.text(
            "SELECT id, uuid, health, service_state, healthy_checks "
            "FROM devices WHERE type = 'GPU'")).one()


def _drains(dep, device_id):
    with dep.engine.connect() as conn:
        return conn.execute(sa.text(
            'SELECT count(*) FROM health_drains WHERE device_id = :d'),
            {'d': device_id}).scalar()


def _conductors_flushing_every(dep, seconds, stop):
    """Stop the conductors with ``stop`` ('stop': gracefully, writing what
    they hold; 'kill': SIGKILL) and start them again writing heartbeats
    every ``seconds``."""
    conductors = [name for name in dep.services
                  if name.startswith('conductor')]
    for name in conductors:
        getattr(dep.services[name], stop)()
    extra = next(path for path in dep.config_files
                 if path.endswith('extra.conf'))
    with open(extra, 'w') as f:
        f.write(CONFIG % seconds)
    for name in conductors:
        dep.services[name].start()


def test_conductors_killed_with_a_failure_unwritten(deployment):
    dep = deployment
    gpu = _gpu(dep)
    assert gpu.service_state == 'serving'
    _conductors_flushing_every(dep, HOLDING_FLUSH_SECONDS, 'stop')
    dep.write_inventory(_inventory(gpu_healthy=False))
    # Beats saying so are accepted (the agent beats every second) and held
    # unwritten.
    time.sleep(2.5)
    assert _gpu(dep).service_state == 'serving'
    killed = time.monotonic()
    _conductors_flushing_every(dep, FLUSH_SECONDS, 'kill')
    wait_for(lambda: _gpu(dep).service_state == 'drained',
             timeout=DRAIN_BOUND, interval=0.1,
             message='the failed GPU was never drained')
    print('conductors SIGKILLed holding an unhealthy beat: drained %.1fs '
          'after the kill' % (time.monotonic() - killed))
    shown = dep.get('/v2/devices/%s/health' % gpu.uuid).json()
    assert (shown['health'], shown['service_state'], shown['reasons']) == (
        'unhealthy', 'drained', [GPU_REASON])

    # Healthy again: both conductors write its beats, it comes back once.
    dep.write_inventory(_inventory(gpu_healthy=True))
    wait_for(lambda: _gpu(dep).service_state == 'serving',
             timeout=DRAIN_BOUND + 3, interval=0.1,
             message='the GPU never returned to service')
    time.sleep(FLUSH_SECONDS + 1)
    assert _drains(dep, gpu.id) == 1
    assert _gpu(dep).service_state == 'serving'
