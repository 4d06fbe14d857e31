"""The conductor keeps a real Placement in step with the inventory.

Each test runs the whole service in one process (tests/functional/cloud.py)
against the real Placement of conftest.py, creates the compute node
provider as Nova would, and checks the result through Placement's own API.
The conductor runs no periodic sync; tests run it with ``sync_now()``.
"""

import os
import threading

import pytest

from cyborg_like.common import context
from cyborg_like.conductor.placement import runner
from cyborg_like.conf import CONF
from cyborg_like.db import placement_sync
from cyborg_like.drivers import base
from cyborg_like.drivers import fake
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
HOST = cloud_module.HOST
FPGA_QUERY = ('/allocation_candidates?resources1=FPGA:1'
              '&required1=CUSTOM_FPGA_INTEL_N3000&group_policy=none')


def _cloud(placement, inventory_file=cloud_module.INVENTORY):
    return cloud_module.Cloud(inventory_file=str(inventory_file), overrides={
        ('placement', 'auth_type'): 'admin_token',
        ('placement', 'endpoint'): placement.url,
        ('placement', 'token'): 'admin',
    }, placement_sync_by_hand=True)


@pytest.fixture
def cloud(placement):
    """The compute node in Placement, the service started and synced."""
    _compute_node(placement)
    cloud = _cloud(placement).start()
    try:
        _sync(cloud)
        yield cloud
    finally:
        cloud.stop()


def _compute_node(placement, name=HOST):
    return placement.request('POST', '/resource_providers', {'name': name},
                             expect=200).json()['uuid']


def _sync(cloud):
    return cloud.services[0].placement.sync_now()


def _dirty():
    return [host for host, _ in placement_sync.hosts_to_sync()]


def _deployables(cloud):
    """{(model, deployable name): deployable with its device}"""
    devices = {d['id']: d for d in cloud.list_devices()}
    found = {}
    for dep in cloud.conductor_api.list_deployables(
            ADMIN, {}, 1000, None, 'created_at', 'asc'):
        dep['device'] = devices[dep['device_id']]
        found[(dep['device']['model'], dep['name'])] = dep
    return found


def _inventory(placement, rp_uuid):
    return placement.get('/resource_providers/%s/inventories'
                         % rp_uuid)['inventories']


def _traits(placement, rp_uuid):
    return set(placement.get('/resource_providers/%s/traits'
                             % rp_uuid)['traits'])


def _reserved(placement, rp_uuid):
    [inventory] = _inventory(placement, rp_uuid).values()
    return inventory['reserved']


def _candidates(placement, query):
    body = placement.get(query)
    return sorted(uuid for request in body['allocation_requests']
                  for uuid in request['allocations'])


def test_tree_inventories_and_traits_follow_the_inventory(placement):
    cn = _compute_node(placement)
    # A child Nova made for a vGPU; not ours, so left alone.
    foreign = placement.request('POST', '/resource_providers', {
        'name': HOST + '_pci_0000_3b_00_0', 'parent_provider_uuid': cn},
        expect=200).json()['uuid']
    cloud = _cloud(placement).start()
    try:
        assert _sync(cloud)['pending'] == []
        assert _dirty() == []
        deps = _deployables(cloud)
        tree = placement.get('/resource_providers?in_tree=%s'
                             % cn)['resource_providers']
        children = {p['uuid']: p for p in tree if p['uuid'] != cn}
        assert set(children) == {d['rp_uuid'] for d in deps.values()} | {
            foreign}
        for (model, name), dep in deps.items():
            provider = children[dep['rp_uuid']]
            assert provider['parent_provider_uuid'] == cn
            assert provider['name'] == '%s_%s_%s' % (
                HOST, dep['device']['uuid'], name)
        n3000 = ('CUSTOM_CYBORG_LIKE_MANAGED', 'CUSTOM_FPGA_INTEL_N3000',
                 'CUSTOM_VENDOR_0X8086', 'CUSTOM_MODEL_PAC_N3000')
        expected = {
            ('PAC N3000', 'region0'): ('FPGA', {
                *n3000, 'CUSTOM_REGION_REGION0'}),
            ('PAC N3000', 'region1'): ('FPGA', {
                *n3000, 'CUSTOM_REGION_REGION1'}),
            ('A100', 'gpu0'): ('PGPU', {
                'CUSTOM_CYBORG_LIKE_MANAGED', 'CUSTOM_GPU_NVIDIA_A100',
                'CUSTOM_VENDOR_0X10DE', 'CUSTOM_MODEL_A100'}),
            ('T4', 'gpu0'): ('PGPU', {
                'CUSTOM_CYBORG_LIKE_MANAGED', 'CUSTOM_GPU_NVIDIA_T4',
                'CUSTOM_VENDOR_0X10DE', 'CUSTOM_MODEL_T4'}),
        }
        for key, (rc, traits) in expected.items():
            rp_uuid = deps[key]['rp_uuid']
            assert _inventory(placement, rp_uuid) == {rc: {
                'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
                'step_size': 1, 'allocation_ratio': 1.0}}
            assert _traits(placement, rp_uuid) == traits
        assert _traits(placement, foreign) == set()

        # What Nova asks for a device profile's groups.
        fpga_rps = sorted(deps[('PAC N3000', r)]['rp_uuid']
                          for r in ('region0', 'region1'))
        assert _candidates(placement, FPGA_QUERY) == fpga_rps
        assert _candidates(placement, (
            '/allocation_candidates?resources1=PGPU:1'
            '&required1=CUSTOM_GPU_NVIDIA_T4&group_policy=none')) == [
                deps[('T4', 'gpu0')]['rp_uuid']]

        # A sync with nothing to change writes nothing.
        generations = {p['uuid']: p['generation'] for p in tree}
        placement_sync.mark_dirty_now([HOST])
        assert _sync(cloud) == {'synced': [HOST], 'pending': []}
        after = placement.get('/resource_providers?in_tree=%s'
                              % cn)['resource_providers']
        assert generations == {p['uuid']: p['generation'] for p in after}
    finally:
        cloud.stop()


def test_vanished_devices_go_once_free_and_bitstreams_show(placement,
                                                           tmp_path):
    cn = _compute_node(placement)
    path = cloud_module.inventory_copy(tmp_path)
    cloud = _cloud(placement, path).start()
    try:
        _sync(cloud)
        deps = _deployables(cloud)
        t4 = deps[('T4', 'gpu0')]['rp_uuid']
        a100 = deps[('A100', 'gpu0')]['rp_uuid']
        region1 = deps[('PAC N3000', 'region1')]['rp_uuid']
        # A server holds the A100 in Placement.
        consumer = '40000000-0000-0000-0000-000000000001'
        placement.request('PUT', '/allocations/%s' % consumer, {
            'allocations': {a100: {'resources': {'PGPU': 1}}},
            'project_id': '50000000-0000-0000-0000-000000000001',
            'user_id': '60000000-0000-0000-0000-000000000001',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expect=204)

        def change(devices):
            devices[:] = [d for d in devices if d['model'] not in ('T4',
                                                                   'A100')]
            devices[0]['deployables'][1]['bitstream_id'] = 'bs-crypto-1'
        cloud_module.rewrite_inventory(path, change)
        assert cloud.services[1].tracker.update_inventory()
        assert _dirty() == [HOST]

        assert _sync(cloud) == {'synced': [], 'pending': [HOST]}
        placement.request('GET', '/resource_providers/%s' % t4, expect=404)
        placement.get('/resource_providers/%s' % a100)   # in use: kept
        assert 'CUSTOM_BITSTREAM_BS_CRYPTO_1' in _traits(placement, region1)
        assert _dirty() == [HOST]

        placement.request('DELETE', '/allocations/%s' % consumer, expect=204)
        assert _sync(cloud) == {'synced': [HOST], 'pending': []}
        placement.request('GET', '/resource_providers/%s' % a100,
                          expect=404)
        tree = placement.get('/resource_providers?in_tree=%s'
                             % cn)['resource_providers']
        assert len(tree) == 3     # the compute node and the two regions
        assert _dirty() == []
    finally:
        cloud.stop()


def test_disabled_devices_are_reserved(cloud, placement):
    deps = _deployables(cloud)
    fpga = deps[('PAC N3000', 'region0')]['device']['uuid']
    regions = sorted(deps[('PAC N3000', r)]['rp_uuid']
                     for r in ('region0', 'region1'))
    assert _candidates(placement, FPGA_QUERY) == regions

    cloud.conductor_api.set_device_status(ADMIN, fpga, 'maintaining')
    assert _dirty() == [HOST]
    _sync(cloud)
    assert [_reserved(placement, rp) for rp in regions] == [1, 1]
    assert _candidates(placement, FPGA_QUERY) == []

    cloud.conductor_api.set_device_status(ADMIN, fpga, 'enabled')
    _sync(cloud)
    assert [_reserved(placement, rp) for rp in regions] == [0, 0]
    assert _candidates(placement, FPGA_QUERY) == regions
    assert _dirty() == []


class SickA100Driver(fake.FakeDriver, base.HealthReporting):
    """The fake inventory, with the A100 reporting uncorrectable ECC."""

    def health(self):
        return [base.DeviceHealth(
            device.controlpath_id, healthy=device.model != 'A100',
            reasons=['ECC errors'] if device.model == 'A100' else [])
            for device in self.discover()]


def test_unhealthy_devices_are_reserved(placement, monkeypatch):
    monkeypatch.setattr('cyborg_like.agent.resource_tracker.load_drivers',
                        lambda conf: {'fake': SickA100Driver(CONF)})
    _compute_node(placement)
    cloud = _cloud(placement).start()
    try:
        deps = _deployables(cloud)
        a100 = deps[('A100', 'gpu0')]
        cloud.services[1].tracker.heartbeat()
        cloud.wait_for(lambda: cloud.conductor_api.get_device_health(
            ADMIN, a100['device']['uuid'], 1)['health'] == 'unhealthy')
        assert _sync(cloud) == {'synced': [HOST], 'pending': []}
        assert _reserved(placement, a100['rp_uuid']) == 1
        assert _reserved(placement, deps[('T4', 'gpu0')]['rp_uuid']) == 0
    finally:
        cloud.stop()


def test_placement_down_keeps_the_host_marked(cloud, placement):
    deps = _deployables(cloud)
    t4 = deps[('T4', 'gpu0')]
    placement.stop()
    cloud.conductor_api.set_device_status(ADMIN, t4['device']['uuid'],
                                          'maintaining')
    assert _sync(cloud) is None          # a warning, no error
    assert _dirty() == [HOST]

    placement.start()
    assert _sync(cloud) == {'synced': [HOST], 'pending': []}
    assert _reserved(placement, t4['rp_uuid']) == 1
    assert _dirty() == []


def test_generation_conflicts_are_retried(cloud, placement):
    deps = _deployables(cloud)
    t4 = deps[('T4', 'gpu0')]
    client = cloud.services[0].placement._client
    real_read = client.inventories
    reads = []

    def read_then_someone_writes(uuid):
        generation, inventories = real_read(uuid)
        if uuid == t4['rp_uuid']:
            reads.append(generation)
            if len(reads) == 1:
                # Another writer gets in between our read and write.
                placement.request(
                    'PUT', '/resource_providers/%s/traits' % uuid, {
                        'resource_provider_generation': generation,
                        'traits': ['CUSTOM_CYBORG_LIKE_MANAGED',
                                   'HW_GPU_API_DIRECT3D_V10_0']},
                    expect=200)
        return generation, inventories
    client.inventories = read_then_someone_writes

    cloud.conductor_api.set_device_status(ADMIN, t4['device']['uuid'],
                                          'maintaining')
    assert _sync(cloud) == {'synced': [HOST], 'pending': []}
    assert reads == [reads[0], reads[0] + 1]
    assert _reserved(placement, t4['rp_uuid']) == 1
    # The traits are ours again: the stray one went.
    assert 'HW_GPU_API_DIRECT3D_V10_0' not in _traits(placement,
                                                  t4['rp_uuid'])
    assert 'CUSTOM_GPU_NVIDIA_T4' in _traits(placement, t4['rp_uuid'])


def test_compute_node_must_have_the_exact_hostname(placement):
    # LP#2139369: Nova registered the short name, the agent the FQDN.
    short = _compute_node(placement, HOST.split('.')[0])
    cloud = _cloud(placement).start()
    try:
        assert _sync(cloud) == {'synced': [], 'pending': [HOST]}
        assert len(placement.get('/resource_providers?in_tree=%s'
                                 % short)['resource_providers']) == 1
        assert _dirty() == [HOST]

        cn = _compute_node(placement)
        assert _sync(cloud) == {'synced': [HOST], 'pending': []}
        assert len(placement.get('/resource_providers?in_tree=%s'
                                 % cn)['resource_providers']) == 5
    finally:
        cloud.stop()


def test_sync_is_off_without_auth(placement):
    cloud = cloud_module.Cloud().start()
    try:
        assert cloud.services[0].placement.enabled is False
        assert _sync(cloud) is None
        assert placement.get('/resource_providers')[
            'resource_providers'] == []
    finally:
        cloud.stop()


def test_custom_names_are_created_and_bad_ones_left_out(placement,
                                                        tmp_path):
    _compute_node(placement)
    path = cloud_module.inventory_copy(tmp_path)

    def change(devices):
        t4 = devices[2]['deployables'][0]
        t4['attributes'] = {'rc': 'CUSTOM_T4_SLICE',
                            'trait0': 'CUSTOM_GPU_NVIDIA_T4',
                            'trait1': 'CUSTOM_lower_case',
                            'trait2': 'NO_SUCH_STANDARD_TRAIT'}
        t4['num_accelerators'] = 4
    cloud_module.rewrite_inventory(path, change)
    cloud = _cloud(placement, path).start()
    try:
        assert _sync(cloud) == {'synced': [HOST], 'pending': []}
        t4 = _deployables(cloud)[('T4', 'gpu0')]
        placement.get('/resource_classes/CUSTOM_T4_SLICE')
        assert _inventory(placement, t4['rp_uuid'])['CUSTOM_T4_SLICE'][
            'total'] == 4
        assert _traits(placement, t4['rp_uuid']) == {
            'CUSTOM_CYBORG_LIKE_MANAGED', 'CUSTOM_GPU_NVIDIA_T4',
            'CUSTOM_VENDOR_0X10DE', 'CUSTOM_MODEL_T4'}

        # An operator's trait through the attributes API follows.
        attribute = cloud.conductor_api.create_attribute(
            ADMIN, t4['id'], 'trait9', 'CUSTOM_TEAM_ML')
        assert _dirty() == [HOST]
        _sync(cloud)
        assert 'CUSTOM_TEAM_ML' in _traits(placement, t4['rp_uuid'])
        cloud.conductor_api.delete_attribute(ADMIN, attribute['uuid'])
        _sync(cloud)
        assert 'CUSTOM_TEAM_ML' not in _traits(placement, t4['rp_uuid'])
        assert _dirty() == []
    finally:
        cloud.stop()


def test_drained_devices_are_reserved(placement, tmp_path, monkeypatch):
    """A failed driver operation drains the family's devices (FPGAs for
    opae) until a verify succeeds: reserved in Placement meanwhile."""
    monkeypatch.setenv('CYBORG_LIKE_TEST_DRIVERS', str(tmp_path))
    _compute_node(placement)
    cloud = _cloud(placement)
    cloud.overrides[('agent', 'playbook_dir')] = os.path.join(
        os.path.dirname(__file__), '..', 'playbooks')
    cloud.start()
    try:
        _sync(cloud)
        deps = _deployables(cloud)
        regions = sorted(deps[('PAC N3000', r)]['rp_uuid']
                         for r in ('region0', 'region1'))
        gpus = [deps[(m, 'gpu0')]['rp_uuid'] for m in ('A100', 'T4')]
        cloud.services[1].tracker.heartbeat()

        def verify():
            return cloud.conductor_api.start_driver_operation(
                ADMIN, HOST, {'action': 'verify', 'family': 'opae',
                              'parameters': {}})['operation']['uuid']

        def ended(uuid):
            return cloud.wait_for(lambda: (lambda o: o['state'] if o[
                'state'] in ('succeeded', 'failed') else None)(
                cloud.conductor_api.get_operation(ADMIN, uuid)), timeout=60)
        cloud.wait_for(lambda: cloud.conductor_api.get_host(
            ADMIN, HOST)['agent_version'] == '1.2')
        assert ended(verify()) == 'failed'      # no opae installed
        _sync(cloud)
        assert [_reserved(placement, rp) for rp in regions] == [1, 1]
        assert [_reserved(placement, rp) for rp in gpus] == [0, 0]
        assert _candidates(placement, FPGA_QUERY) == []

        (tmp_path / 'opae.version').write_text('2.1.0\n')
        assert ended(verify()) == 'succeeded'
        _sync(cloud)
        assert [_reserved(placement, rp) for rp in regions] == [0, 0]
        assert _candidates(placement, FPGA_QUERY) == regions
    finally:
        cloud.stop()


def test_conductors_starting_together_sync_each_host_once(placement):
    # The cloud's own conductor does not sync; two others start at once.
    cloud = cloud_module.Cloud().start()
    options = {'auth_type': 'admin_token', 'endpoint': placement.url,
               'token': 'admin', 'sync_interval': 3600}
    try:
        _compute_node(placement)
        others = ['compute-%d.example.org' % n for n in range(2, 7)]
        for host in others:
            cloud.conductor_api.report_inventory(ADMIN, host, [], 'empty')
        for name, value in options.items():
            CONF.set_override(name, value, group='placement')
        everyone = sorted([HOST] + others)

        def served():
            return [placement.served('GET', '/resource_providers?name=%s'
                                     % host) for host in everyone]
        before = served()
        conductors = [runner.PlacementSync(CONF) for _ in range(2)]
        start = threading.Barrier(len(conductors))
        results = []

        def first_run(conductor):
            start.wait()
            results.append(conductor.sync_now())
        threads = [threading.Thread(target=first_run, args=(c,))
                   for c in conductors]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert sorted(h for r in results for h in r['synced']) == everyone
        assert [r['pending'] for r in results] == [[], []]
        assert _dirty() == []
        once = [n + 1 for n in before]
        assert served() == once
        # One starting later finds every host synced within the interval.
        assert runner.PlacementSync(CONF).sync_now() == {
            'synced': [], 'pending': []}
        assert served() == once
    finally:
        for name in options:
            CONF.clear_override(name, group='placement')
        cloud.stop()
