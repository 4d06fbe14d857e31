"""Binding rules that need more than HTTP to set up: disabled devices,
hosts that stopped heartbeating, races for the last handle."""

import concurrent.futures
import datetime

import sqlalchemy as sa

from cyborg_like.common import context
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
    return cloud.wait_for(done)


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
    # The agent stops: no heartbeat nor report will bring the host back.
    cloud.services.pop(1).stop()
    with db_api.writer() as session:
        session.execute(sa.update(models.Host).values(
            last_heartbeat=datetime.datetime(2000, 1, 1)))
    [arq] = _arqs(cloud, 1)
    _bind(cloud, arq, _gpu_deployable(cloud, 'T4'),
          '10000000-0000-0000-0000-000000000002')
    result = _resolved(cloud, arq)
    assert result['state'] == states.BIND_FAILED
    assert 'is down' in result['state_reason']


def test_racing_binds_take_each_handle_once(cloud):
    """Twelve ARQs race for the T4's single handle: one wins."""
    arqs = _arqs(cloud, 12)
    t4 = _gpu_deployable(cloud, 'T4')
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        list(pool.map(lambda n: _bind(cloud, arqs[n], t4,
                                      '20000000-0000-0000-0000-%012d' % n),
                      range(12)))
    results = [_resolved(cloud, arq) for arq in arqs]
    bound = [r for r in results if r['state'] == states.BOUND]
    assert len(bound) == 1
    assert all('No free attach handle' in r['state_reason']
               for r in results if r['state'] == states.BIND_FAILED)
    with db_api.reader() as session:
        in_use = session.scalar(sa.select(sa.func.count()).where(
            models.AttachHandle.in_use == sa.true()))
    assert in_use == 1


def test_a_binding_whose_conductor_died_fails_and_frees_its_handle(cloud):
    """A conductor stopped between taking a handle and finishing: another
    conductor's periodic sweep fails the ARQ and gives the handle back."""
    from cyborg_like.db import arqs
    [arq] = _arqs(cloud, 1)
    t4 = _gpu_deployable(cloud, 'T4')
    arqs.start_bind({arq: {'hostname': cloud_module.HOST,
                           'device_rp_uuid': t4['rp_uuid'],
                           'instance_uuid':
                               '60000000-0000-0000-0000-000000000001'}})
    arqs.allocate(arq, host_down_after=60)     # the handle is taken...
    manager = cloud.services[0].manager
    manager._fail_interrupted_binds()          # ...but it is not old yet
    assert cloud.conductor_api.get_arq(ADMIN, arq)['state'] == \
        states.BIND_STARTED
    with db_api.writer() as session:
        session.execute(sa.update(models.ExtARQ).values(
            updated_at=datetime.datetime(2000, 1, 1)))
    manager._fail_interrupted_binds()
    result = cloud.conductor_api.get_arq(ADMIN, arq)
    assert result['state'] == states.BIND_FAILED
    assert 'interrupted' in result['state_reason']
    with db_api.reader() as session:
        assert session.scalar(sa.select(sa.func.count()).where(
            models.AttachHandle.in_use == sa.true())) == 0
