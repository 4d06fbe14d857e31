"""Releasing an attach handle is ordered: the handle is not bindable until
its agent confirms the release (an FPGA region may be erased meanwhile),
and an erase clears the region's bitstream, so the next binding programs
it instead of trusting a stale id."""

import pytest
import sqlalchemy as sa

from cyborg_like.agent import service as agent_service
from cyborg_like.common import context
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import arq_handles
from cyborg_like.db import arqs
from cyborg_like.db import models
from tests import arq_world
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
INSTANCE = '90000000-0000-0000-0000-%012d'


class ConfirmingWorld(arq_world.World):
    agent_version = '1.1'


@pytest.fixture(params=[ConfirmingWorld, arq_world.World],
                ids=['agent-1.1', 'agent-1.0'])
def world(request, tmp_path):
    with request.param.on_sqlite(tmp_path) as world:
        yield world


def _pending():
    with db_api.reader() as session:
        return session.scalars(sa.select(models.AttachHandle.uuid).where(
            models.AttachHandle.release_pending == sa.true())).all()


def _set_bitstream(bitstream_id):
    with db_api.writer() as session:
        session.execute(sa.update(models.Deployable).values(
            bitstream_id=bitstream_id))


def test_a_released_handle_waits_for_its_agent(world):
    confirms = world.agent_version == '1.1'
    x, y, z = world.new_arq(), world.new_arq(), world.new_arq()
    _set_bitstream('bs-old')
    assert world.bind(x, INSTANCE % 1) == states.FINISH
    [job] = arqs.unbind([x])
    assert job['confirm'] is confirms
    if not confirms:
        # An older agent never confirms: the handle is free at once.
        assert _pending() == []
        assert world.bind(y, INSTANCE % 2) == states.FINISH
        return
    assert _pending() == [job['attach_handle']['uuid']]
    # The region's other handle is free, but the region is being erased.
    assert world.bind(y, INSTANCE % 2) == states.FAIL
    assert 'being released' in arqs.get(y)['state_reason']
    handle = job['attach_handle']['uuid']
    assert arq_handles.confirm_release(handle, erased=True)
    assert _pending() == []
    assert not arq_handles.confirm_release(handle, True)
    # The erase cleared the bitstream: the next binding must program.
    attempt = arqs.start_bind({z: world.fields(INSTANCE % 3)})[z]
    bound = arqs.allocate(z, attempt, arq_world.HOST_DOWN_AFTER)
    assert bound['current_bitstream_id'] is None
    world.check_invariants()


def test_a_release_without_erase_keeps_the_bitstream(tmp_path):
    with ConfirmingWorld.on_sqlite(tmp_path) as world:
        x, y = world.new_arq(), world.new_arq()
        _set_bitstream('bs-kept')
        assert world.bind(x, INSTANCE % 4) == states.FINISH
        [job] = arqs.unbind([x])
        arq_handles.confirm_release(job['attach_handle']['uuid'], erased=False)
        attempt = arqs.start_bind({y: world.fields(INSTANCE % 5)})[y]
        bound = arqs.allocate(y, attempt, arq_world.HOST_DOWN_AFTER)
        assert bound['current_bitstream_id'] == 'bs-kept'


def _fpga_region(cloud, name):
    return next(d for d in cloud.conductor_api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc') if d['name'] == name)


def test_the_agent_confirms_each_release_over_rpc(cloud):
    api = cloud.conductor_api
    arq = _bind_to_region0(cloud, INSTANCE % 6)
    cloud.wait_for(lambda: api.get_arq(ADMIN, arq)['state'] == states.BOUND)
    api.unbind_arqs(ADMIN, [arq])
    cloud.wait_for(lambda: _pending() == [])


def test_releases_missed_while_the_agent_was_away_are_done_on_restart(
        cloud):
    """A release whose cast was lost (the agent was down): the restarted
    agent's first report brings it back, and the agent confirms it."""
    cloud.services.pop(1).stop()
    with db_api.writer() as session:
        session.execute(sa.update(models.AttachHandle).values(
            release_pending=True))
    assert len(_pending()) > 0
    agent = agent_service.AgentService(CONF)
    agent.start()
    cloud.services.append(agent)
    cloud.wait_for(lambda: _pending() == [])


def _bind_to_region0(cloud, instance):
    api = cloud.conductor_api
    api.create_device_profile(ADMIN, 'fpga', [{'resources:FPGA': '1'}], None)
    arq = api.create_arqs(ADMIN, 'fpga', None)[0]['uuid']
    api.bind_arqs(ADMIN, {arq: {
        'hostname': cloud_module.HOST,
        'device_rp_uuid': _fpga_region(cloud, 'region0')['rp_uuid'],
        'instance_uuid': instance, 'project_id': None}})
    return arq


def _hold_a_release(region_uuid):
    """One of the region's handles as an unbind leaves it before its agent
    confirms: free, but its release (an erase) still under way."""
    with db_api.writer() as session:
        deployable_id = session.scalar(sa.select(models.Deployable.id).where(
            models.Deployable.uuid == region_uuid))
        handle = session.scalars(sa.select(models.AttachHandle).where(
            models.AttachHandle.deployable_id == deployable_id)).first()
        handle.release_pending = True
        return handle.uuid


def test_a_binding_waits_for_the_release_before_it(cloud, monkeypatch):
    """Nova places a new instance on a device as soon as the old one is
    deleted: its binding waits for the release instead of failing."""
    pending = _hold_a_release(_fpga_region(cloud, 'region0')['uuid'])
    met = []            # the binding's tries that found it being released
    allocate = arqs.allocate

    def allocate_seen(*args, **kwargs):
        try:
            return allocate(*args, **kwargs)
        except exception.ReleasePending:
            met.append(args[0])
            raise
    monkeypatch.setattr(arqs, 'allocate', allocate_seen)
    arq = _bind_to_region0(cloud, INSTANCE % 7)
    # Still waiting: it tried again after finding the release under way,
    # twice (a binding that gave up would not have come back).
    cloud.wait_for(lambda: len(met) >= 3)
    assert cloud.conductor_api.get_arq(
        ADMIN, arq)['state'] == states.BIND_STARTED
    assert arq_handles.confirm_release(pending, erased=True)
    cloud.wait_for(lambda: cloud.conductor_api.get_arq(
        ADMIN, arq)['state'] == states.BOUND)


def test_a_binding_fails_when_the_release_never_comes():
    cloud = cloud_module.Cloud(
        overrides={('conductor', 'release_wait'): 0}).start()
    try:
        _hold_a_release(_fpga_region(cloud, 'region0')['uuid'])
        arq = _bind_to_region0(cloud, INSTANCE % 8)
        cloud.wait_for(lambda: cloud.conductor_api.get_arq(
            ADMIN, arq)['state'] == states.BIND_FAILED)
        assert 'being released' in cloud.conductor_api.get_arq(
            ADMIN, arq)['state_reason']
    finally:
        cloud.stop()
