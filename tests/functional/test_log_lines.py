"""The log tells the story: one line per state change an operator cares
about, with ids and a duration, and one access line per API request.

Driven through the API (and the conductor's RPC for what an agent sends)
on the in-process cloud; the lines are read with caplog as they reach
Python logging."""

import datetime
import logging
import re

import pytest
import sqlalchemy as sa
import webob

from cyborg_like.common import context
from cyborg_like.common import inventory
from cyborg_like.common import states
from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
HOST = cloud_module.HOST
INSTANCE = '40000000-0000-0000-0000-000000000001'
LATEST = {'OpenStack-API-Version': 'accelerator latest'}
SECONDS = r'\d+\.\d s'
MS = r'\d+\.\d ms'


@pytest.fixture
def cloud(log):
    # Capturing from the start (``log``). The conductor's sweeps every
    # second, so host changes show at once.
    cloud = cloud_module.Cloud(overrides={
        ('conductor', 'service_heartbeat_interval'): 1}).start()
    try:
        yield cloud
    finally:
        cloud.stop()


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.INFO)
    return caplog


def _wait_for_line(cloud, log, pattern):
    """The message of the first record matching ``pattern`` (re.search)."""
    def found():
        # With what the cloud logged while it started (setup).
        records = log.get_records('setup') + log.records
        return next((r.getMessage() for r in records
                     if re.search(pattern, r.getMessage())), None)
    return cloud.wait_for(found)


def _messages(log, logger_prefix='cyborg_like'):
    return [r.getMessage() for r in log.records
            if r.name.startswith(logger_prefix)]


def _arq_for(cloud, profile, groups):
    status, _ = cloud.call('POST', '/v2/device_profiles',
                           {'name': profile, 'groups': groups})
    assert status == 201
    status, body = cloud.call('POST', '/v2/accelerator_requests',
                              {'device_profile_name': profile})
    assert status == 201
    return body['arqs'][0]['uuid']


def _deployable(cloud, name, model=None):
    status, body = cloud.call('GET', '/v2/deployables?name=%s' % name)
    devices = {d['id']: d for d in cloud.list_devices()}
    return next(d for d in body['deployables']
                if model is None or devices[d['device_id']]['model'] == model)


def _bind(cloud, arq, deployable, instance=INSTANCE):
    status, _ = cloud.call('PATCH', '/v2/accelerator_requests', {arq: [
        {'op': 'add', 'path': '/hostname', 'value': HOST},
        {'op': 'add', 'path': '/device_rp_uuid',
         'value': deployable['rp_uuid']},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})
    assert status == 202


def _resolved(cloud, arq):
    def done():
        found = cloud.conductor_api.get_arq(ADMIN, arq)
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(done)


def test_bind_unbind_delete_each_leave_a_line(cloud, log):
    arq = _arq_for(cloud, 'crypto', [{'resources:FPGA': '1',
                                      'accel:bitstream_id': 'bs-crypto-1'}])
    region = _deployable(cloud, 'region0')
    _bind(cloud, arq, region)
    bound = _resolved(cloud, arq)
    assert bound['state'] == states.BOUND
    handle = bound['attach_handle_uuid']
    assert _wait_for_line(cloud, log, 'Binding ARQ %s to instance %s on '
                          'host %s started' % (arq, INSTANCE, HOST))
    assert _wait_for_line(
        cloud, log, r'^ARQ %s bound to instance %s on host %s: handle PCI '
        r'0000:5e:00\.1 \(%s\), programmed with bitstream bs-crypto-1 in '
        r'%s$' % (arq, INSTANCE, HOST, handle, SECONDS))
    # The agent's side of the programming, with its duration.
    assert _wait_for_line(
        cloud, log, r'^Programming region0 of PCI 0000:5e:00\.0 \(bitstream '
        r'bs-crypto-1\) finished in %s$' % SECONDS)

    status, _ = cloud.call('PATCH', '/v2/accelerator_requests', {arq: [
        {'op': 'remove', 'path': '/hostname'},
        {'op': 'remove', 'path': '/device_rp_uuid'},
        {'op': 'remove', 'path': '/instance_uuid'}]})
    assert status == 202
    assert _wait_for_line(
        cloud, log, r'^ARQ %s unbound from instance %s on host %s: handle '
        r'PCI 0000:5e:00\.1 \(%s\) released \(%s\)$'
        % (arq, INSTANCE, HOST, handle, MS))

    status, _ = cloud.call('DELETE', '/v2/accelerator_requests?arqs=%s'
                           % arq)
    assert status == 204
    assert _wait_for_line(cloud, log,
                          r'^Deleted ARQs %s \(%s\)$' % (arq, MS))
    # No Python dict repr in any of our lines.
    for message in _messages(log):
        assert not re.search(r"\{'\w+': ", message), message


def test_deleting_a_bound_arq_says_what_it_released(cloud, log):
    arq = _arq_for(cloud, 'gpu', [{'resources:PGPU': '1'}])
    _bind(cloud, arq, _deployable(cloud, 'gpu0', 'T4'))
    handle = _resolved(cloud, arq)['attach_handle_uuid']
    status, _ = cloud.call('DELETE', '/v2/accelerator_requests?instance=%s'
                           % INSTANCE, headers=LATEST)
    assert status == 204
    assert _wait_for_line(
        cloud, log, r'^ARQ %s of instance %s deleted while bound on host '
        r'%s: handle PCI 0000:d8:00\.0 \(%s\) released \(%s\)$'
        % (arq, INSTANCE, HOST, handle, MS))
    assert _wait_for_line(cloud, log, r'^Deleted the ARQs of instance %s '
                          r'\(%s\)$' % (INSTANCE, MS))


def test_a_failed_bind_gives_its_reason_and_time(cloud, log):
    a100 = next(d for d in cloud.list_devices() if d['model'] == 'A100')
    cloud.conductor_api.set_device_status(ADMIN, a100['uuid'], 'maintaining')
    arq = _arq_for(cloud, 'gpu', [{'resources:PGPU': '1'}])
    _bind(cloud, arq, _deployable(cloud, 'gpu0', 'A100'))
    assert _resolved(cloud, arq)['state'] == states.BIND_FAILED
    line = _wait_for_line(cloud, log, r'^Binding ARQ %s to instance %s on '
                          r'host %s failed after %s: ' % (arq, INSTANCE,
                                                          HOST, SECONDS))
    assert 'maintaining' in line


def _program(cloud, deployable, bitstream):
    status, body = cloud.call(
        'PATCH', '/v2/deployables/%s/program' % deployable['uuid'],
        [{'op': 'replace', 'path': '/bitstream_id',
          'value': [{'image_uuid': bitstream}]}])
    assert status == 202, body
    return body['operation']['uuid']


def test_programming_started_finished_and_failed(cloud, log):
    region = _deployable(cloud, 'region1')
    operation = _program(cloud, region, 'bs-crypto-1')
    what = (r'deployable region1 \(%s\) on host %s with bitstream %%s '
            r'\(operation %%s\)' % (region['uuid'], HOST))
    assert _wait_for_line(cloud, log, r'^Programming %s started$'
                          % (what % ('bs-crypto-1', operation)))
    assert _wait_for_line(cloud, log, r'^Programming %s finished in %s$'
                          % (what % ('bs-crypto-1', operation), SECONDS))

    cloud.wait_for(lambda: cloud.conductor_api.get_operation(
        ADMIN, operation)['state'] == 'succeeded')
    failing = _program(cloud, region, 'bs-broken')
    line = _wait_for_line(cloud, log, r'^Programming %s failed after %s: '
                          % (what % ('bs-broken', failing), SECONDS))
    assert 'PR interface id mismatch' in line


def test_host_down_and_up_again(cloud, log):
    # The conductor's first sweep sums up; it ran before the agent's first
    # report, or after.
    assert _wait_for_line(cloud, log, r'^Hosts: [01] up, 0 down$')
    assert _wait_for_line(cloud, log, r'^Hosts: 1 up, 0 down$|^Host %s is '
                          r'up \(new host\)$' % HOST)
    # The agent stops; its last heartbeat (written now if still pending)
    # is made old. The stream listener stops first: a beat the agent queued
    # before it stopped would otherwise come after and make it new again.
    cloud.services.pop(1).stop()
    cloud.services[0].heartbeat_stream.stop()
    cloud.services[0].heartbeats.flush()
    with db_api.writer() as session:
        session.execute(sa.update(models.Host).values(
            last_heartbeat=datetime.datetime(2000, 1, 1)))
    line = _wait_for_line(cloud, log, r'^Host %s is down: no heartbeat for '
                          r'\d+ s' % HOST)
    assert 'host_down_after = 30 s' in line
    # A heartbeat (as the agent sends it) brings it back.
    cloud.conductor_api.heartbeat(ADMIN, HOST, '1.1', 'any', [])
    assert _wait_for_line(cloud, log, r'^Host %s is up again after \d+ s '
                          r'without heartbeats$' % HOST)


def test_device_health_changes(cloud, log):
    a100 = next(d for d in cloud.list_devices() if d['model'] == 'A100')
    # Only this test's beats: the agent's own (healthy) beat for the host
    # would replace one of them in the collector before its flush. The
    # stream listener stops too: a beat the agent queued before it stopped
    # would come after.
    cloud.services.pop(1).stop()
    cloud.services[0].heartbeat_stream.stop()
    cpid = {'cpid_type': 'PCI',
            'cpid_info': inventory.pci_address_info('0000:af:00.0')}

    def beat(healthy, reasons):
        cloud.conductor_api.heartbeat(ADMIN, HOST, '1.1', 'any', [
            {'controlpath_id': cpid, 'healthy': healthy, 'reasons': reasons,
             'utilization': {}}])

    beat(False, ['3 uncorrectable ECC errors'])
    assert _wait_for_line(
        cloud, log, r'^Device %s on %s is unhealthy: 3 uncorrectable ECC '
        r'errors$' % (a100['uuid'], HOST))
    assert _wait_for_line(
        cloud, log, r'^Device %s on %s drained: not bound until healthy '
        r'again$' % (a100['uuid'], HOST))
    beat(True, [])
    assert _wait_for_line(cloud, log, r'^Device %s on %s is healthy$'
                          % (a100['uuid'], HOST))
    # [health] recovery_checks (3) healthy readings in a row.
    for _ in range(2):
        cloud.services[0].heartbeats.flush()
        beat(True, [])
    assert _wait_for_line(
        cloud, log, r'^Device %s on %s is healthy again and back in '
        r'service$' % (a100['uuid'], HOST))


def test_one_access_line_per_request(cloud, log):
    status, body = cloud.call('GET', '/v2/devices?limit=1',
                              headers={'X-Project-Id': 'p-42'})
    assert status == 200
    [line] = [r for r in log.records if r.name == 'cyborg_like.api.access']
    message = line.getMessage()
    assert re.match(r'^\S+ "GET /v2/devices\?limit=1" status: 200 len: \d+ '
                    r'time: %s request: req-[0-9a-f-]{36} project: p-42$'
                    % MS, message), message
    # The line carries the request's own context (its id in the prefix).
    assert message.endswith('project: %s' % line.context.project_id)
    assert 'request: %s ' % line.context.request_id in message

    # Refused before any handler (415): logged too, with its request id.
    request = webob.Request.blank('/v2/device_profiles', method='POST',
                                  body=b'x', content_type='text/plain')
    status = request.get_response(cloud.app).status_int
    assert status == 415
    lines = [r.getMessage() for r in log.records
             if r.name == 'cyborg_like.api.access']
    assert len(lines) == 2
    assert re.match(r'^\S+ "POST /v2/device_profiles" status: %d len: \d+ '
                    r'time: %s request: req-[0-9a-f-]{36} project: -$'
                    % (status, MS), lines[1]), lines[1]
