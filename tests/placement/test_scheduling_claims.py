"""Standalone bindings claim their allocations in a real Placement
(docs/scheduling.md): one unit of the deployable's resource class on its
provider for the consumer, removed when the ARQ is unbound or deleted; a
provider Placement says is full (Nova's allocations hold it) is given back
and the next candidate taken."""

import uuid

import pytest

from cyborg_like.common import states
from tests.functional import cloud as cloud_module
from tests.placement.test_placement_sync import _cloud
from tests.placement.test_placement_sync import _compute_node
from tests.placement.test_placement_sync import _deployables
from tests.placement.test_placement_sync import _sync

PATH = '/v2/accelerator_requests'


@pytest.fixture
def cloud(placement):
    _compute_node(placement)
    cloud = _cloud(placement).start()
    try:
        _sync(cloud)
        status, body = cloud.call('POST', '/v2/device_profiles', {
            'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]})
        assert status == 201, body
        yield cloud
    finally:
        cloud.stop()


def _allocations(placement, consumer):
    return {rp: a['resources'] for rp, a in placement.get(
        '/allocations/%s' % consumer)['allocations'].items()}


def _scheduled(cloud, consumer):
    status, body = cloud.call('POST', PATH, {'device_profile_name': 'fpga'})
    assert status == 201, body
    arq = body['arqs'][0]['uuid']
    status, body = cloud.call('POST', '%s/%s/schedule' % (PATH, arq),
                              {'instance_uuid': consumer})
    assert status == 202, body

    def done():
        found = cloud.call('GET', '%s/%s' % (PATH, arq))[1]
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(done)


def _regions(cloud):
    found = _deployables(cloud)
    return [found[('PAC N3000', name)]['rp_uuid']
            for name in ('region0', 'region1')]


def test_the_allocation_is_claimed_and_removed_on_unbind(cloud, placement):
    consumer = str(uuid.uuid4())
    bound = _scheduled(cloud, consumer)
    assert bound['state'] == states.BOUND, bound
    assert _allocations(placement, consumer) == {
        bound['device_rp_uuid']: {'FPGA': 1}}
    usage = placement.get('/resource_providers/%s/usages'
                          % bound['device_rp_uuid'])['usages']
    assert usage == {'FPGA': 1}
    status, _ = cloud.call('PATCH', PATH, {bound['uuid']: [
        {'op': 'remove', 'path': '/hostname'},
        {'op': 'remove', 'path': '/device_rp_uuid'},
        {'op': 'remove', 'path': '/instance_uuid'}]})
    assert status == 202
    assert _allocations(placement, consumer) == {}


def test_two_of_one_consumer_and_delete(cloud, placement):
    consumer = str(uuid.uuid4())
    first, second = (_scheduled(cloud, consumer) for _ in range(2))
    assert [first['state'], second['state']] == [states.BOUND] * 2
    assert _allocations(placement, consumer) == {
        first['device_rp_uuid']: {'FPGA': 1},
        second['device_rp_uuid']: {'FPGA': 1}}
    status, _ = cloud.call('DELETE', '%s?arqs=%s' % (PATH, first['uuid']))
    assert status == 204
    assert _allocations(placement, consumer) == {
        second['device_rp_uuid']: {'FPGA': 1}}
    status, _ = cloud.call('DELETE', '%s?instance=%s' % (PATH, consumer))
    assert status == 204
    assert _allocations(placement, consumer) == {}


def test_a_provider_nova_filled_is_passed_over(cloud, placement):
    region0, region1 = _regions(cloud)
    # Nova placed an instance on region0: Placement counts it used, while
    # its ARQ is not bound yet.
    nova_instance = str(uuid.uuid4())
    placement.request('PUT', '/allocations/%s' % nova_instance, {
        'allocations': {region0: {'resources': {'FPGA': 1}}},
        'project_id': 'nova-project', 'user_id': 'nova-user',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'},
        expect=204)
    consumer = str(uuid.uuid4())
    bound = _scheduled(cloud, consumer)
    assert bound['state'] == states.BOUND, bound
    assert bound['device_rp_uuid'] == region1
    assert _allocations(placement, consumer) == {region1: {'FPGA': 1}}
    # Region0's handle was given back: Nova's binding takes it.
    status, body = cloud.call('POST', PATH, {'device_profile_name': 'fpga'})
    nova_arq = body['arqs'][0]['uuid']
    status, _ = cloud.call('PATCH', PATH, {nova_arq: [
        {'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': region0},
        {'op': 'add', 'path': '/instance_uuid', 'value': nova_instance}]})
    assert status == 202
    nova_bound = cloud.wait_for(lambda: (lambda a: a if a['state'] in
                                         states.RESOLVED else None)(
        cloud.call('GET', '%s/%s' % (PATH, nova_arq))[1]))
    assert nova_bound['state'] == states.BOUND, nova_bound
    # Nothing left: a third fails, claiming nothing.
    third_consumer = str(uuid.uuid4())
    third = _scheduled(cloud, third_consumer)
    assert third['state'] == states.BIND_FAILED
    assert 'No free deployable' in third['state_reason']
    assert _allocations(placement, third_consumer) == {}
    # Nova's allocation was never touched.
    assert _allocations(placement, nova_instance) == {region0: {'FPGA': 1}}
    status, _ = cloud.call('DELETE', '%s?arqs=%s,%s' % (
        PATH, nova_arq, bound['uuid']))
    assert status == 204
    assert _allocations(placement, consumer) == {}
    placement.request('DELETE', '/allocations/%s' % nova_instance,
                      expect=204)


def test_another_projects_consumer_is_refused(cloud, placement):
    region0, _ = _regions(cloud)
    theirs = str(uuid.uuid4())
    placement.request('PUT', '/allocations/%s' % theirs, {
        'allocations': {region0: {'resources': {'FPGA': 1}}},
        'project_id': 'someone-else', 'user_id': 'u',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'},
        expect=204)
    refused = _scheduled(cloud, theirs)
    assert refused['state'] == states.BIND_FAILED, refused
    assert 'another project' in refused['state_reason']
    assert _allocations(placement, theirs) == {region0: {'FPGA': 1}}
    placement.request('DELETE', '/allocations/%s' % theirs, expect=204)
