"""Processes killed with SIGKILL in the middle of a firmware flash (fault
injection), as test_faults_kill.py does for bindings and programming.

Two conductors, an agent and the API as real processes over RabbitMQ and
MariaDB/PostgreSQL, liveness tuned short. The firmware image is uploaded
to the catalog through the API; the agent fetches it from the API and the
fake driver takes SLOW_SECONDS to "flash" it, so the flash is under way
when a process is killed. Whatever dies, the operation ends failed within
the liveness bound, with the reason, and the device stays drained
(maintaining: not bound, reserved in Placement) until an operator looks
at it: a card whose flash was interrupted may hold half an image.
"""

import time

import pytest
import requests
import sqlalchemy as sa

from .infra import BACKENDS
from .infra import running_deployment
from .infra import wait_for
from .test_faults_kill import CONDUCTOR_BOUND
from .test_faults_kill import HOST_BOUND
from .test_faults_kill import LIVENESS

pytestmark = pytest.mark.integration

SLOW_SECONDS = 20
SLOW_FIRMWARE = b'SLEEP %d\n{"version": "2.0"}\n' % SLOW_SECONDS


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('firmware-%s' % request.param))
    with running_deployment(
            request.param, workdir, conductors=2, extra_config=LIVENESS,
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        dep.wait_host_up()
        yield dep


def _call(dep, method, path, body=None, expected=200):
    return dep.call(method, path, body, expected, timeout=30)


def _firmware(dep, data):
    image = _call(dep, 'POST', '/v2/bitstreams', {
        'name': 'slow-fim', 'kind': 'firmware', 'vendor': '0x8086'},
        201).json()['uuid']
    resp = requests.put('%s/v2/bitstreams/%s/data' % (dep.api_url, image),
                        data=data, timeout=30, headers={
                            'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 200, resp.text
    return image


def _fpga(dep):
    [device] = [d for d in dep.list_ok('devices') if d['type'] == 'FPGA']
    return device


def _operation(dep, uuid):
    return _call(dep, 'GET', '/v2/operations/%s' % uuid).json()


def _flash(dep, device, image):
    started = _call(dep, 'POST', '/v2/devices/%s/firmware' % device,
                    {'image_uuid': image}, 202)
    return started.headers['Location'].rsplit('/', 1)[1]


def _flashes_logged(dep):
    return dep.services['agent'].read_log().count('Flashing ')


def _running_on_agent(dep, operation, logged_before):
    """Until the agent has the job (the operation runs, the image is
    fetched and verified): then a kill interrupts the flash itself."""
    wait_for(lambda: _operation(dep, operation)['state'] == 'running',
             timeout=15, message='the flash never started')
    wait_for(lambda: _flashes_logged(dep) > logged_before,
             timeout=15, message='the agent never started flashing')


def _owner_service(dep, operation):
    with dep.engine.connect() as conn:
        host = conn.execute(sa.text(
            'SELECT c.hostname FROM operations o JOIN conductors c '
            'ON c.uuid = o.conductor_uuid WHERE o.uuid = :u'),
            {'u': operation}).scalar()
    return next(name for name, h in dep.conductor_hosts.items() if h == host)


def _status(dep, device):
    return _call(dep, 'GET', '/v2/devices/%s' % device).json()['status']


def _seconds_until(predicate, timeout):
    start = time.monotonic()
    wait_for(predicate, timeout=timeout, interval=0.1)
    return time.monotonic() - start


def _back_in_service(dep, device):
    _call(dep, 'POST', '/v2/devices/%s/enable' % device)
    assert _status(dep, device) == 'enabled'


def test_sigkill_agent_mid_flash(deployment):
    dep = deployment
    device = _fpga(dep)['uuid']
    logged = _flashes_logged(dep)
    operation = _flash(dep, device, _firmware(dep, SLOW_FIRMWARE))
    assert _status(dep, device) == 'maintaining'
    _running_on_agent(dep, operation, logged)

    dep.services['agent'].kill()

    took = _seconds_until(
        lambda: _operation(dep, operation)['state'] == 'failed', HOST_BOUND)
    print('agent SIGKILL mid-flash: operation failed after %.1fs' % took)
    assert 'went down' in _operation(dep, operation)['detail']
    assert _status(dep, device) == 'maintaining'
    # The agent comes back; the device stays drained for the operator.
    dep.services['agent'].start()
    dep.wait_host_up()
    assert _status(dep, device) == 'maintaining'
    assert _operation(dep, operation)['state'] == 'failed'
    _back_in_service(dep, device)


def test_sigkill_conductor_mid_flash(deployment):
    dep = deployment
    device = _fpga(dep)['uuid']
    logged = _flashes_logged(dep)
    operation = _flash(dep, device, _firmware(dep, SLOW_FIRMWARE))
    _running_on_agent(dep, operation, logged)
    owner = _owner_service(dep, operation)

    dep.services[owner].kill()

    took = _seconds_until(
        lambda: _operation(dep, operation)['state'] == 'failed',
        CONDUCTOR_BOUND)
    print('conductor SIGKILL mid-flash: operation failed after %.1fs'
          % took)
    assert 'conductor stopped' in _operation(dep, operation)['detail']
    assert _status(dep, device) == 'maintaining'
    dep.services[owner].start()
    # The agent finishing the flash later changes nothing of the record.
    assert _operation(dep, operation)['state'] == 'failed'
    _back_in_service(dep, device)
    # Nothing blocks the device: it is flashed again at once.
    again = _flash(dep, device, _firmware(dep, b'{"version": "2.1"}\n'))
    wait_for(lambda: _operation(dep, again)['state'] == 'succeeded',
             timeout=SLOW_SECONDS + 30,
             message='the second flash did not succeed')
    assert _operation(dep, again)['result']['new']['firmware_version'] == \
        '2.1'
    assert _status(dep, device) == 'enabled'
