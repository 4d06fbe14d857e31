"""A device under a lease is reserved inventory in the real Placement
while its window is open, and offered again once the window closed
(docs/leases.md). The lease periodic runs with the test's clock."""

import datetime

import pytest

from cyborg_like.common import states
from cyborg_like.conductor import leases as lease_lib
from cyborg_like.conf import CONF
from cyborg_like.db import hosts
from tests.functional import test_leases as helpers
from tests.placement import test_placement_sync as sync_helpers

T4_QUERY = ('/allocation_candidates?resources1=PGPU:1'
            '&required1=CUSTOM_GPU_NVIDIA_T4&group_policy=none')


@pytest.fixture
def cloud(placement):
    """The compute node in Placement, the service started and synced."""
    sync_helpers._compute_node(placement)
    cloud = sync_helpers._cloud(placement).start()
    try:
        sync_helpers._sync(cloud)
        yield cloud
    finally:
        cloud.stop()


def test_a_leased_device_is_reserved_while_its_window_is_open(
        cloud, placement):
    t4 = sync_helpers._deployables(cloud)[('T4', 'gpu0')]
    assert sync_helpers._reserved(placement, t4['rp_uuid']) == 0
    assert sync_helpers._candidates(placement, T4_QUERY) == [t4['rp_uuid']]
    clock = helpers._Clock()
    manager = cloud.services[0].manager
    periodic = lease_lib.Leases(CONF, manager._release, manager.nova,
                                None, clock)
    start, end = helpers._now_window(hours_after=2)
    lease = helpers._lease(cloud, devices=[t4['device']['uuid']],
                           start=start, end=end)
    # The window opens: the host is marked, the sync reserves the T4.
    periodic.run()
    assert sync_helpers._dirty() == [sync_helpers.HOST]
    sync_helpers._sync(cloud)
    assert sync_helpers._reserved(placement, t4['rp_uuid']) == 1
    assert sync_helpers._candidates(placement, T4_QUERY) == []
    # The lessee binds it standalone: the lease is its claim, Placement
    # is not asked (it would refuse: all reserved).
    status, body = cloud.call('POST', '/v2/device_profiles', {
        'name': 't4', 'groups': [helpers.T4_PROFILE]})
    assert status == 201, body
    consumer = '1ea5e000-0000-4000-8000-000000000001'
    bound = helpers._schedule(cloud, helpers._arq(cloud, helpers.LESSEE),
                              helpers.LESSEE, 1)
    assert bound['state'] == states.BOUND, bound
    assert placement.get('/allocations/%s' % consumer)['allocations'] == {}
    # The window ends and its grace passes: the request is unbound, the
    # T4 offered again.
    clock.now = datetime.datetime.fromisoformat(end) + datetime.timedelta(
        seconds=CONF.leases.grace_seconds + 1)
    periodic.run()
    _, unbound = cloud.call('GET', '/v2/accelerator_requests/%s'
                            % bound['uuid'], headers=helpers.LESSEE)
    assert unbound['state'] == states.UNBOUND
    sync_helpers._sync(cloud)
    assert sync_helpers._reserved(placement, t4['rp_uuid']) == 0
    cloud.wait_for(lambda: sync_helpers._candidates(placement, T4_QUERY)
                   == [t4['rp_uuid']])
    _, shown = cloud.call('GET', '/v2/leases/%s' % lease['uuid'],
                          headers=helpers.LESSEE)
    assert shown['state'] == states.EXPIRED
    assert hosts.utcnow() < clock.now     # the clock was the test's
