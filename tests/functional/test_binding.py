"""Binding rules that need more than HTTP to set up: disabled devices,
hosts that stopped heartbeating (races for the last handle: on real
databases, tests/integration/test_arq_races.py)."""

import contextlib
import datetime
import json
import threading

import pytest
import sqlalchemy as sa
import webob

from cyborg_like.common import context
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()


def _gpu_deployable(cloud, model):
    devices = [d for d in cloud.list_devices() if d['model'] == model]
    deployables = cloud.conductor_api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc')
    return next(d for d in deployables if d['device_id'] == devices[0]['id'])


def _arqs(cloud, count):
    api = cloud.conductor_api
    if not api.list_device_profiles(ADMIN, ['gpu'], 10, None, 'created_at',
                                    'asc'):
        api.create_device_profile(ADMIN, 'gpu', [{'resources:PGPU': '1'}],
                                  None)
    return [api.create_arqs(ADMIN, 'gpu', None)[0]['uuid']
            for _ in range(count)]


def _bind(cloud, arq, deployable, instance):
    cloud.conductor_api.bind_arqs(ADMIN, {arq: {
        'hostname': cloud_module.HOST,
        'device_rp_uuid': deployable['rp_uuid'],
        'instance_uuid': instance, 'project_id': None}})


def _resolved(cloud, arq):
    def done():
        found = cloud.conductor_api.get_arq(ADMIN, arq)
        return found if found['state'] in states.RESOLVED else None
    # A ceiling, not the design: a binding queued behind others that wait
    # out [conductor] agent_timeout takes a few of those on a busy machine.
    return cloud.wait_for(done, timeout=30)


def test_disabled_device_is_not_bound(cloud):
    a100 = next(d for d in cloud.list_devices() if d['model'] == 'A100')
    cloud.conductor_api.set_device_status(ADMIN, a100['uuid'], 'maintaining')
    [arq] = _arqs(cloud, 1)
    _bind(cloud, arq, _gpu_deployable(cloud, 'A100'),
          '10000000-0000-0000-0000-000000000001')
    result = _resolved(cloud, arq)
    assert result['state'] == states.BIND_FAILED
    assert 'maintaining' in result['state_reason']


def test_host_down_is_not_bound(cloud):
    _stop_agent_and_age_host(cloud)
    [arq] = _arqs(cloud, 1)
    _bind(cloud, arq, _gpu_deployable(cloud, 'T4'),
          '10000000-0000-0000-0000-000000000002')
    result = _resolved(cloud, arq)
    assert result['state'] == states.BIND_FAILED
    assert 'is down' in result['state_reason']


DEAD_CONDUCTOR = 'dead0000-0000-4000-8000-000000000000'


def _stop_agent_and_age_host(cloud):
    """The agent stops: no heartbeat nor report will bring the host back
    (a heartbeat still pending, even one the periodic flush has taken, is
    written by the flush before the host is aged). The conductor's stream
    listener stops too: a beat the agent published before it stopped may
    still wait in the stream's queue, and taken after the aging it would
    bring the host back (its stop returns once what it took is handed to
    the collector; a second stop, the cloud's, does nothing)."""
    cloud.services.pop(1).stop()
    cloud.services[0].heartbeat_stream.stop()
    cloud.services[0].heartbeats.flush()
    with db_api.writer() as session:
        session.execute(sa.update(models.Host).values(
            last_heartbeat=datetime.datetime(2000, 1, 1)))


def _age_arqs(cloud):
    with db_api.writer() as session:
        session.execute(sa.update(models.ExtARQ).values(
            updated_at=datetime.datetime(2000, 1, 1)))


@pytest.mark.parametrize('owner,fault,reason', [
    ('dead', None, 'its conductor stopped'),
    ('alive', _stop_agent_and_age_host, 'went down while binding'),
    ('alive', _age_arqs, 'took more than'),
    # Its live conductor's job lost (to a database error, say): found
    # carried by no job at two sweeps running (conductor/lost_work.py).
    ('alive, no job', lambda cloud: None, 'its conductor lost it'),
])
def test_an_interrupted_binding_fails_and_frees_its_handle(
        cloud, owner, fault, reason):
    """A binding nobody will finish -- its conductor stopped heartbeating,
    its host went down, it outlived twice the agent timeout, or its live
    conductor carries it in no job -- is failed by a conductor's sweep,
    and its handle given back."""
    from cyborg_like.db import arqs
    service = cloud.services[0]
    conductor = DEAD_CONDUCTOR if owner == 'dead' \
        else service.manager.conductor_uuid
    [arq] = _arqs(cloud, 1)
    t4 = _gpu_deployable(cloud, 'T4')
    with contextlib.ExitStack() as stack:
        attempts = arqs.start_bind({arq: {
            'hostname': cloud_module.HOST, 'device_rp_uuid': t4['rp_uuid'],
            'instance_uuid': '60000000-0000-0000-0000-000000000001'}},
            conductor_uuid=conductor)
        if owner == 'alive':
            stack.enter_context(_carried(service.workers, attempts[arq]))
        arqs.allocate(arq, attempts[arq], host_down_after=60)
        if fault is not None:
            service.manager._fail_interrupted_work()   # nothing wrong yet
            assert cloud.conductor_api.get_arq(ADMIN, arq)['state'] == \
                states.BIND_STARTED
            fault(cloud)
        service.manager._fail_interrupted_work()
        result = cloud.conductor_api.get_arq(ADMIN, arq)
    assert result['state'] == states.BIND_FAILED
    assert reason in result['state_reason']
    with db_api.reader() as session:
        assert session.scalar(sa.select(sa.func.count()).where(
            models.AttachHandle.in_use == sa.true())) == 0
    # The binding's own late steps change nothing now.
    assert arqs.finish_bind(arq, attempts[arq]) is False


@contextlib.contextmanager
def _carried(workers, key):
    """A job of the conductor's ``workers`` carries ``key`` (a binding at
    work) until the block ends."""
    done = threading.Event()
    with workers.reserve(1) as submit:
        submit(done.wait, 60, carries=key)
    try:
        yield
    finally:
        done.set()


def test_an_operation_whose_conductor_died_is_failed(cloud):
    """Programming accepted by a conductor that then died: the sweep fails
    the operation, and the region can be programmed again."""
    from cyborg_like.db import deployables
    region = next(d for d in cloud.conductor_api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc')
        if d['name'] == 'region0')
    _job, operation, _dep = deployables.start_program(
        region['uuid'], 'bs-crypto-1', 'p1', DEAD_CONDUCTOR)
    manager = cloud.services[0].manager
    manager._fail_interrupted_work()
    failed = cloud.conductor_api.get_operation(ADMIN, operation['uuid'])
    assert failed['state'] == states.FAILED
    assert 'interrupted' in failed['detail']
    started = cloud.conductor_api.program_deployable(
        ADMIN, region['uuid'], 'bs-crypto-1')
    done = cloud.wait_for(lambda: cloud.conductor_api.get_operation(
        ADMIN, started['operation']['uuid'])['state'] in (
            states.SUCCEEDED, states.FAILED) and cloud.conductor_api
        .get_operation(ADMIN, started['operation']['uuid']))
    assert done['state'] == states.SUCCEEDED, done


def test_binds_beyond_the_queue_bound_are_refused_and_write_nothing():
    """One worker, room for two bindings: with the agent gone, the first
    binding waits on it and the second waits for the worker; the third
    is refused at once and its ARQ stays as it was."""
    cloud = cloud_module.Cloud(overrides={
        ('conductor', 'workers'): 1, ('conductor', 'max_queued_work'): 2,
        ('conductor', 'agent_timeout'): 3}).start()
    try:
        cloud.services.pop(1).stop()            # prepare never answers
        a, b, c = _arqs(cloud, 3)
        t4 = _gpu_deployable(cloud, 'T4')
        _bind(cloud, a, t4, '30000000-0000-0000-0000-000000000001')
        _bind(cloud, b, t4, '30000000-0000-0000-0000-000000000002')
        with pytest.raises(exception.Overloaded):
            _bind(cloud, c, t4, '30000000-0000-0000-0000-000000000003')
        # Through the API: 503, Retry-After, a code a client can test.
        response = webob.Request.blank(
            '/v2/accelerator_requests', method='PATCH',
            content_type='application/json', body=json.dumps({c: [
                {'op': 'add', 'path': '/hostname',
                 'value': cloud_module.HOST},
                {'op': 'add', 'path': '/device_rp_uuid',
                 'value': t4['rp_uuid']},
                {'op': 'add', 'path': '/instance_uuid',
                 'value': '30000000-0000-0000-0000-000000000003'}]}).encode()
        ).get_response(cloud.app)
        assert response.status_int == 503, response.text
        assert response.headers['Retry-After']
        assert 'accel.overloaded' in response.text
        assert cloud.conductor_api.get_arq(ADMIN, c)['state'] == \
            states.INITIAL
        # The slots come back as the bindings end (the agent timed out).
        assert _resolved(cloud, a)['state'] == states.BIND_FAILED
        assert _resolved(cloud, b)['state'] == states.BIND_FAILED
        _bind(cloud, c, t4, '30000000-0000-0000-0000-000000000003')
        assert _resolved(cloud, c)['state'] == states.BIND_FAILED
    finally:
        cloud.stop()
