"""Processes killed with SIGKILL in the middle of work that drains a
device (fault injection), as test_faults_kill.py does for bindings and
programming: a firmware flash on the FPGA and a MIG layout on the GPU,
and a firmware rollout whose owner dies mid-flash.

Two conductors, an agent and the API as real processes over RabbitMQ and
MariaDB/PostgreSQL, liveness tuned short. The firmware image is uploaded
to the catalog through the API and the agent fetches it from the API; the
fake driver takes SLOW_SECONDS to "flash" it or to apply the layout, so
the work is under way on the agent when a process is killed. Whatever
dies, the operation ends failed within the liveness bound, with the
reason, and the device stays drained (maintaining: not bound, reserved in
Placement) until an operator enables it: a card whose flash was
interrupted may hold half an image, a GPU half a layout.
"""

import copy
import time

import pytest
import requests

from .infra import BACKENDS
from .infra import BASE_INVENTORY
from .infra import CONDUCTOR_BOUND
from .infra import HOST_BOUND
from .infra import LIVENESS
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

SLOW_SECONDS = 20


def _inventory():
    inventory = copy.deepcopy(BASE_INVENTORY)
    [gpu] = [d for d in inventory['devices'] if d['type'] == 'GPU']
    gpu['mig_profiles'] = {'1g.10gb': {'slices': 1, 'instances': 7},
                           '3g.40gb': {'slices': 3, 'instances': 2},
                           '4g.40gb': {'slices': 4, 'instances': 1}}
    gpu['mig_apply_seconds'] = SLOW_SECONDS
    return inventory


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('draining-%s' % request.param))
    with running_deployment(
            request.param, workdir, conductors=2,
            extra_config=LIVENESS + '[rollouts]\ninterval = 0.5\n',
            inventory=_inventory(),
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        dep.wait_host_up()
        yield dep


def _call(dep, method, path, body=None, expected=200):
    return dep.call(method, path, body, expected, timeout=30)


def _started(response):
    return response.headers['Location'].rsplit('/', 1)[1]


def _firmware_image(dep, slow=True):
    """A firmware image in the catalog; ``slow``: the fake driver takes
    SLOW_SECONDS to flash it."""
    data = (b'SLEEP %d\n{"version": "2.0"}\n' % SLOW_SECONDS if slow
            else b'{"version": "2.1"}\n')
    image = _call(dep, 'POST', '/v2/bitstreams', {
        'name': 'fim', 'kind': 'firmware', 'vendor': '0x8086'},
        201).json()['uuid']
    resp = requests.put(
        '%s/v2/bitstreams/%s/data' % (dep.api_url, image), data=data,
        timeout=30, headers={'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 200, resp.text
    return image


class Flash:
    """Flashing the FPGA's firmware with a catalog image."""
    device_type, logged = 'FPGA', 'Flashing '

    def start(self, dep, device, slow=True):
        return _started(_call(dep, 'POST', '/v2/devices/%s/firmware'
                              % device, {'image_uuid': _firmware_image(
                                  dep, slow)}, 202))

    def check_done(self, result):
        assert result['new']['firmware_version'] == '2.1'


class MigLayout:
    """Cutting the GPU into MIG devices."""
    device_type, logged = 'GPU', 'Applying MIG layout'

    def start(self, dep, device, slow=True):
        layout = ['3g.40gb', '4g.40gb'] if slow else ['1g.10gb']
        return _started(_call(dep, 'POST', '/v2/devices/%s/mig_layout'
                              % device, {'layout': layout}, 202))

    def check_done(self, result):
        # The fake driver is as slow for every layout.
        assert result['new'] == ['1g.10gb']


WORK = {'firmware': Flash(), 'mig_layout': MigLayout()}


@pytest.fixture(params=sorted(WORK))
def work(request):
    return WORK[request.param]


def _device(dep, work):
    [device] = [d for d in dep.list_ok('devices')
                if d['type'] == work.device_type]
    return device['uuid']


def _operation(dep, uuid):
    return _call(dep, 'GET', '/v2/operations/%s' % uuid).json()


def _logged(dep, work):
    return dep.services['agent'].read_log().count(work.logged)


def _running_on_agent(dep, work, operation, logged_before):
    """Until the agent has the job (the operation runs and, for a flash,
    the image is fetched and verified): then a kill interrupts the work
    itself."""
    wait_for(lambda: _operation(dep, operation)['state'] == 'running',
             timeout=15, message='the operation never started')
    wait_for(lambda: _logged(dep, work) > logged_before, timeout=15,
             message='the agent never started the work')


def _status(dep, device):
    return _call(dep, 'GET', '/v2/devices/%s' % device).json()['status']


def _seconds_until(predicate, timeout):
    start = time.monotonic()
    wait_for(predicate, timeout=timeout, interval=0.1)
    return time.monotonic() - start


def _back_in_service(dep, device):
    _call(dep, 'POST', '/v2/devices/%s/enable' % device)
    assert _status(dep, device) == 'enabled'


def test_sigkill_agent_mid_work(deployment, work):
    dep = deployment
    device = _device(dep, work)
    logged = _logged(dep, work)
    operation = work.start(dep, device)
    assert _status(dep, device) == 'maintaining'
    _running_on_agent(dep, work, operation, logged)

    dep.services['agent'].kill()

    took = _seconds_until(
        lambda: _operation(dep, operation)['state'] == 'failed', HOST_BOUND)
    print('agent SIGKILL mid-%s: operation failed after %.1fs'
          % (type(work).__name__, took))
    assert 'went down' in _operation(dep, operation)['detail']
    assert _status(dep, device) == 'maintaining'
    # The agent comes back; the device stays drained for the operator.
    dep.services['agent'].start()
    dep.wait_host_up()
    assert _status(dep, device) == 'maintaining'
    assert _operation(dep, operation)['state'] == 'failed'
    _back_in_service(dep, device)


def test_sigkill_conductor_mid_work(deployment, work):
    dep = deployment
    device = _device(dep, work)
    logged = _logged(dep, work)
    operation = work.start(dep, device)
    _running_on_agent(dep, work, operation, logged)
    owner = dep.owner('operations', operation)

    dep.services[owner].kill()

    took = _seconds_until(
        lambda: _operation(dep, operation)['state'] == 'failed',
        CONDUCTOR_BOUND)
    print('conductor SIGKILL mid-%s: operation failed after %.1fs'
          % (type(work).__name__, took))
    assert 'conductor stopped' in _operation(dep, operation)['detail']
    assert _status(dep, device) == 'maintaining'
    dep.services[owner].start()
    # The agent finishing the work later changes nothing of the record.
    assert _operation(dep, operation)['state'] == 'failed'
    _back_in_service(dep, device)
    # Nothing blocks the device: the work is done again at once.
    again = work.start(dep, device, slow=False)
    wait_for(lambda: _operation(dep, again)['state'] == 'succeeded',
             timeout=SLOW_SECONDS + 30,
             message='the work did not succeed the second time')
    work.check_done(_operation(dep, again)['result'])
    assert _status(dep, device) == 'enabled'


def test_firmware_rollout_owner_killed_mid_flash(deployment):
    """The flash the killed owner carried fails; the card is not flashed
    with the new image again (it may hold half of it): the canary failed,
    so the other conductor, which takes the rollout over, rolls it back,
    and the card stays drained for the operator."""
    dep = deployment
    device = _device(dep, WORK['firmware'])
    logged = _logged(dep, WORK['firmware'])
    rollout = _call(dep, 'POST', '/v2/rollouts', {
        'kind': 'firmware', 'image': _firmware_image(dep),
        'strategy': {'canary': 1}}, 201).json()
    path = '/v2/rollouts/%s' % rollout['uuid']
    operation = wait_for(
        lambda: _call(dep, 'GET', path + '/targets').json()['targets'][0][
            'operation_uuid'], timeout=30, message='the flash never began')
    _running_on_agent(dep, WORK['firmware'], operation, logged)
    owner = dep.owner('rollouts', rollout['uuid'])
    assert owner == dep.owner('operations', operation)
    dep.services[owner].kill()
    try:
        took = _seconds_until(
            lambda: dep.owner('rollouts', rollout['uuid']) not in (
                None, owner), CONDUCTOR_BOUND)
        print('firmware rollout taken over %.1fs after its owner was '
              'killed' % took)
        done = wait_for(lambda: (lambda r: r if r['state'] not in (
            'running', 'rolling_back') else None)(
            _call(dep, 'GET', path).json()), timeout=SLOW_SECONDS + 60,
            message='the rollout never ended')
    finally:
        dep.services[owner].start()
    assert done['state'] == 'failed', done
    assert done['reason'].startswith('The canary failed.'), done
    [target] = _call(dep, 'GET', path + '/targets').json()['targets']
    assert (target['state'], target['attempts']) == ('rolled_back', 1), \
        target
    assert 'conductor stopped' in target['reason']
    assert _operation(dep, operation)['state'] == 'failed'
    assert _status(dep, device) == 'maintaining'
    _back_in_service(dep, device)
