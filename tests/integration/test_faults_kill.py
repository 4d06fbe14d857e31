"""Processes killed with SIGKILL in the middle of work (fault injection).

Two conductors, an agent and the API as real processes over RabbitMQ and
MariaDB/PostgreSQL, with liveness tuned short (heartbeats every second, a
conductor down after 3 s, a host after 4 s). The fake driver's bitstream
``bs-slow`` takes SLOW_SECONDS to program, so a binding or an operation is
reliably under way when a process is killed.

After each fault the invariants hold: no attach handle in use without
exactly one ARQ holding it, and no ARQ or operation left in a transitional
state past the liveness bound; the time each fault took to be repaired is
measured and printed (docs/faults.md records them).
"""

import concurrent.futures
import os
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from .infra import BACKENDS
from .infra import CONDUCTOR_BOUND
from .infra import HOST_BOUND
from .infra import LIVENESS
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

SLOW_SECONDS = 20
RESOLVED = ('Bound', 'BindFailed')


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('kill-%s' % request.param))
    bitstreams = os.path.join(workdir, 'bitstreams')
    os.mkdir(bitstreams)
    for name, content in (('bs-slow', 'SLEEP %d\n' % SLOW_SECONDS),
                          ('bs-quick', 'GBS quick\n')):
        with open(os.path.join(bitstreams, name), 'w') as f:
            f.write(content)
    with running_deployment(
            request.param, workdir, conductors=2, extra_config=LIVENESS,
            agent_config='[agent]\nbitstream_dir = %s\n' % bitstreams,
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        dep.wait_host_up()
        _call(dep, 'POST', '/v2/device_profiles', {
            'name': 'slow', 'groups': [{
                'resources:FPGA': '1', 'accel:bitstream_id': 'bs-slow'}]},
            201)
        yield dep


def _call(dep, method, path, body=None, expected=200):
    return dep.call(method, path, body, expected, timeout=30)


def _region(dep, name):
    [region] = _call(dep, 'GET', '/v2/deployables?name=%s' % name).json()[
        'deployables']
    return region


def _new_arq(dep):
    created = _call(dep, 'POST', '/v2/accelerator_requests',
                    {'device_profile_name': 'slow'}, 201)
    return created.json()['arqs'][0]['uuid']


def _bind(dep, arq, region):
    _call(dep, 'PATCH', '/v2/accelerator_requests', {arq: [
        {'op': 'add', 'path': '/hostname', 'value': dep.host},
        {'op': 'add', 'path': '/device_rp_uuid',
         'value': _region(dep, region)['rp_uuid']},
        {'op': 'add', 'path': '/instance_uuid', 'value': str(uuid.uuid4())},
    ]}, 202)


def _program(dep, region, bitstream):
    """Program ``region`` with ``bitstream``; wait for the operation."""
    started = _call(dep, 'PATCH', '/v2/deployables/%s/program'
                    % _region(dep, region)['uuid'],
                    [{'op': 'replace', 'path': '/bitstream_id',
                      'value': bitstream}], 202)
    operation = started.headers['Location'].rsplit('/', 1)[1]
    wait_for(lambda: _call(dep, 'GET', '/v2/operations/%s' % operation)
             .json()['state'] == 'succeeded', timeout=30,
             message='programming %s with %s did not succeed'
             % (region, bitstream))


def _slow_bind_ahead(dep, region):
    """A bind of the 'slow' profile to ``region`` programs it for
    SLOW_SECONDS only if the region holds another bitstream: in any order,
    an earlier test of the module may have left bs-slow there."""
    _program(dep, region, 'bs-quick')


def _arq(dep, arq):
    return _call(dep, 'GET', '/v2/accelerator_requests/%s' % arq).json()


def _check_invariants(dep):
    with dep.engine.connect() as conn:
        in_use = sorted(conn.execute(sa.text(
            'SELECT id FROM attach_handles WHERE in_use')).scalars())
        holders = conn.execute(sa.text(
            'SELECT uuid, state, attach_handle_id FROM '
            'extended_accelerator_requests WHERE attach_handle_id IS NOT '
            'NULL')).all()
    assert in_use == sorted(h.attach_handle_id for h in holders), holders
    assert all(h.state in ('BindStarted', 'Bound') for h in holders)


def _clean_up(dep, *arqs):
    if arqs:
        _call(dep, 'DELETE', '/v2/accelerator_requests?arqs=%s'
              % ','.join(arqs), expected=204)
    wait_for(lambda: _no_release_pending(dep), timeout=30,
             message='releases were never confirmed by the agent')


def _no_release_pending(dep):
    with dep.engine.connect() as conn:
        return not conn.execute(sa.text(
            'SELECT count(*) FROM attach_handles WHERE release_pending')
        ).scalar()


def _seconds_until(predicate, timeout):
    start = time.monotonic()
    wait_for(predicate, timeout=timeout, interval=0.1)
    return time.monotonic() - start


def test_sigkill_conductor_mid_bind(deployment):
    dep = deployment
    _slow_bind_ahead(dep, 'region0')
    arq = _new_arq(dep)
    _bind(dep, arq, 'region0')
    owner = wait_for(lambda: dep.owner('extended_accelerator_requests',
                                       arq), timeout=10)
    assert _arq(dep, arq)['state'] == 'BindStarted'
    dep.services[owner].kill()
    took = _seconds_until(
        lambda: _arq(dep, arq)['state'] == 'BindFailed', CONDUCTOR_BOUND)
    print('conductor SIGKILL mid-bind: ARQ failed after %.1fs' % took)
    assert 'conductor stopped' in _arq(dep, arq)['state_reason']
    _check_invariants(dep)
    dep.services[owner].start()
    _clean_up(dep, arq)


def test_sigkill_agent_mid_bind(deployment):
    dep = deployment
    _slow_bind_ahead(dep, 'region0')
    devices = {d['uuid'] for d in dep.list_ok('devices')}
    arq = _new_arq(dep)
    _bind(dep, arq, 'region0')
    wait_for(lambda: _arq(dep, arq)['state'] == 'BindStarted', timeout=10)
    dep.services['agent'].kill()
    took = _seconds_until(
        lambda: _arq(dep, arq)['state'] == 'BindFailed', HOST_BOUND)
    print('agent SIGKILL mid-bind: ARQ failed after %.1fs' % took)
    assert 'went down' in _arq(dep, arq)['state_reason']
    _check_invariants(dep)
    dep.services['agent'].start()
    dep.wait_host_up()
    # Same devices, same uuids, no duplicates after the restart.
    wait_for(lambda: {d['uuid'] for d in dep.list_ok('devices')} == devices,
             timeout=30, message='devices changed across an agent restart')
    _clean_up(dep, arq)


def test_sigkill_conductor_mid_programming(deployment):
    dep = deployment
    region = _region(dep, 'region1')
    started = _call(dep, 'PATCH', '/v2/deployables/%s/program'
                    % region['uuid'], [{'op': 'replace',
                                        'path': '/bitstream_id',
                                        'value': 'bs-slow'}], 202)
    operation = started.headers['Location'].rsplit('/', 1)[1]
    owner = dep.owner('operations', operation)
    dep.services[owner].kill()

    def state():
        return _call(dep, 'GET', '/v2/operations/%s' % operation).json()[
            'state']
    took = _seconds_until(lambda: state() == 'failed', CONDUCTOR_BOUND)
    print('conductor SIGKILL mid-programming: operation failed after %.1fs'
          % took)
    # The region is not blocked: it can be programmed again at once.
    dep.services[owner].start()
    again = _call(dep, 'PATCH', '/v2/deployables/%s/program'
                  % region['uuid'], [{'op': 'replace',
                                      'path': '/bitstream_id',
                                      'value': 'bs-quick'}], 202)
    location = again.headers['Location'].rsplit('/', 1)[1]
    wait_for(lambda: _call(dep, 'GET', '/v2/operations/%s' % location)
             .json()['state'] == 'succeeded', timeout=30)


def test_sigkill_api_mid_requests(deployment):
    """Kill the API while creates and binds are in flight: whatever the
    clients were answered, nothing is left half done."""
    dep = deployment
    arqs = [_new_arq(dep) for _ in range(4)]

    def bind(arq):
        try:
            _bind(dep, arq, 'region0')
            return 'accepted'
        except (requests.RequestException, AssertionError) as error:
            return type(error).__name__

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(bind, arq) for arq in arqs]
        time.sleep(0.05)
        dep.services['api'].kill()
        outcomes = [f.result() for f in futures]
    dep.services['api'].start()
    print('API SIGKILL mid-requests: outcomes %s' % outcomes)
    # Every ARQ ends Initial (never accepted) or resolved; none is stuck.
    wait_for(lambda: all(_arq(dep, a)['state'] in RESOLVED + ('Initial',)
                         for a in arqs),
             timeout=SLOW_SECONDS + HOST_BOUND + 10,
             message='an ARQ stayed in a transitional state')
    _check_invariants(dep)
    _clean_up(dep, *arqs)
