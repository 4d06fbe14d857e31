"""What a GPU offers equals what it can make, in every partitioning mode,
from the stand-in hardware to the real Placement.

Each case builds one mode on the stand-in (the fake NVML of
tests/hardware/nvml and a sysfs tree), runs the whole service with the
real nvidia_gpu driver as its agent's one driver (tests/functional/
cloud.py), syncs a real Placement (tests/placement's server, one gunicorn
for the module) and compares, for every deployable of the H100: the
capacity the inventory holds (``num_accelerators``) and the Placement
inventory (total, reserved; none where it offers nothing) with what the
stand-in says the hardware can create, worked out from the stand-in's own
facts below.
"""

import uuid

import pytest

from cyborg_like.common import context
from cyborg_like.db import placement_sync
from tests.functional import cloud as cloud_module
from tests.hardware.nvml.devices import H100_ADDRESS
from tests.hardware.nvml.devices import H100_UUID
# The real Placement, one server for the session.
from tests.placement.conftest import placement_server  # noqa: F401

pytest_plugins = ('tests.hardware.nvml.fixtures',)

ADMIN = context.get_admin_context()
VFS = ['0000:b0:%02x.%d' % (n // 8, n % 8) for n in range(32)]
# NVIDIA H100-4C: its description says max_instance=20 (issue 26's case:
# 32 VFs each listing one available, the GPU makes 20).
VF_TYPE, VF_TYPE_NAME, VF_MAX = 'nvidia-1157', 'NVIDIA H100-4C', 20
# vGPUs of the type made outside the service, on VFs 30 and 31.
FOREIGN_ON_VFS = 2
PF_TYPE, PF_TYPE_NAME, PF_AVAILABLE = 'nvidia-471', 'NVIDIA H100-4C', 20
MIG_TYPE, MIG_TYPE_NAME, MIG_MAX = 'nvidia-1130', 'NVIDIA H100-1-10C', 7


@pytest.fixture
def placement(placement_server):  # noqa: F811 (the imported fixture)
    placement_server.wipe()
    placement_server.request('POST', '/resource_providers',
                             {'name': cloud_module.HOST}, expect=200)
    return placement_server


def _cloud(placement, sysfs_root, vgpu_type=None):
    overrides = {
        ('agent', 'enabled_drivers'): ['nvidia_gpu'],
        ('agent', 'heartbeat_interval'): 60,
        ('agent', 'discovery_interval'): 60,
        ('nvidia_gpu', 'sysfs_root'): sysfs_root,
        ('placement', 'auth_type'): 'admin_token',
        ('placement', 'endpoint'): placement.url,
        ('placement', 'token'): 'admin',
        ('placement', 'sync_interval'): 3600,
    }
    if vgpu_type is not None:
        # One type, no addresses: every GPU listing it (Nova's rule).
        overrides[('nvidia_gpu', 'enabled_vgpu_types')] = [vgpu_type]
    return cloud_module.Cloud(overrides=overrides)


def _sync(cloud):
    """Sync Placement until no host is left to sync: the agent's first
    heartbeat marks the host again when its readings come, and a run that
    finds the mark moved leaves the host to the next run."""
    runner = cloud.services[0].placement

    def synced():
        done = runner.sync_now()
        return done is not None and not done['pending'] and \
            not placement_sync.hosts_to_sync()
    cloud.wait_for(synced)


def _offered(placement, sysfs_root, vgpu_type=None):
    """``{deployable name: (num_accelerators, Placement inventory)}`` of
    the H100, once the service reported it and synced Placement."""
    cloud = _cloud(placement, sysfs_root, vgpu_type).start()
    try:
        _sync(cloud)
        [h100] = [d for d in cloud.list_devices()
                  if d['model'] == 'NVIDIA H100 80GB HBM3']
        found = {}
        for dep in cloud.conductor_api.list_deployables(
                ADMIN, {}, 1000, None, 'created_at', 'asc'):
            if dep['device_id'] == h100['id']:
                inventories = placement.get(
                    '/resource_providers/%s/inventories'
                    % dep['rp_uuid'])['inventories']
                found[dep['name']] = (dep['num_accelerators'], {
                    rc: (i['total'], i['reserved'])
                    for rc, i in inventories.items()})
        return found
    finally:
        cloud.stop()


def _expected(capacities):
    """``{name: (capacity, inventory)}`` from ``{name: (rc, capacity)}``:
    a capacity Placement holds as total, none reserved (an enabled,
    healthy device), and no inventory where the capacity is 0."""
    return {name: (count, {rc: (count, 0)} if count else {})
            for name, (rc, count) in capacities.items()}


def _mig_name(mig):
    return '%s-mig-%d-%d' % (H100_UUID, mig['gpu_instance_id'],
                             mig['compute_instance_id'])


def _mig_rc(mig):
    return 'CUSTOM_MIG_' + mig['name'].rsplit(' ', 1)[1].upper().replace(
        '.', '_')


def _mig_devices(profiles):
    """The H100's MIG devices in the fake's data format, one per profile
    given, as ``nvidia-smi mig -cgi ... -C`` leaves them."""
    memory = {'1g.10gb': 9856, '3g.40gb': 40192}
    return [{'index': n, 'name': 'NVIDIA H100 80GB HBM3 MIG %s' % profile,
             'uuid': 'MIG-%s' % uuid.UUID(int=n + 1),
             'gpu_instance_id': n + 1, 'compute_instance_id': 0,
             'memory_total': memory[profile] * 1024 ** 2, 'memory_used': 0}
            for n, profile in enumerate(profiles)]


def test_whole_gpu(placement, fake_nvml, nvidia_sysfs):
    h100 = fake_nvml.gpu(H100_UUID)
    h100.update(mig_mode=0, migs=[])
    fake_nvml.write()

    # The stand-in: one H100, MIG off, no vGPU manager -> the GPU once.
    assert _offered(placement, nvidia_sysfs.root) == _expected(
        {H100_UUID: ('PGPU', 1)})


def test_vgpu_on_the_physical_function(placement, fake_nvml, nvidia_sysfs):
    fake_nvml.gpu(H100_UUID).update(mig_mode=0, migs=[])
    fake_nvml.write()
    nvidia_sysfs.add_vgpu_type(H100_ADDRESS, PF_TYPE, PF_TYPE_NAME,
                               PF_AVAILABLE)
    # One made outside the service: the kernel says one fewer available.
    nvidia_sysfs.add_mdev(H100_ADDRESS, PF_TYPE, str(uuid.uuid4()))
    available = int(nvidia_sysfs.read(nvidia_sysfs.pci(
        H100_ADDRESS, 'mdev_supported_types', PF_TYPE,
        'available_instances')))
    assert available == PF_AVAILABLE - 1

    assert _offered(placement, nvidia_sysfs.root, PF_TYPE) == _expected({
        H100_UUID: ('PGPU', 0),
        '%s-vgpu-%s' % (H100_UUID, PF_TYPE): ('VGPU', available)})


def test_vgpu_on_sriov_virtual_functions(placement, fake_nvml,
                                         nvidia_sysfs):
    fake_nvml.gpu(H100_UUID).update(mig_mode=0, migs=[])
    fake_nvml.write()
    for number, vf in enumerate(VFS):
        nvidia_sysfs.add_vf(H100_ADDRESS, vf, number)
        nvidia_sysfs.add_vgpu_type(vf, VF_TYPE, VF_TYPE_NAME, 1,
                                   max_instance=VF_MAX)
    for vf in VFS[-FOREIGN_ON_VFS:]:
        nvidia_sysfs.add_mdev(vf, VF_TYPE, str(uuid.uuid4()))

    # Every VF lists one, but the GPU makes VF_MAX of the type, and those
    # made outside the service count: the smaller of the free VFs and the
    # instances left.
    can_make = min(len(VFS) - FOREIGN_ON_VFS, VF_MAX - FOREIGN_ON_VFS)
    assert _offered(placement, nvidia_sysfs.root, VF_TYPE) == _expected({
        H100_UUID: ('PGPU', 0),
        '%s-vgpu-%s' % (H100_UUID, VF_TYPE): ('VGPU', can_make)})


def test_mig_layout(placement, fake_nvml, nvidia_sysfs):
    migs = _mig_devices(['3g.40gb', '1g.10gb', '1g.10gb'])
    fake_nvml.gpu(H100_UUID).update(mig_mode=1, migs=migs)
    fake_nvml.write()

    # One slice per MIG device the stand-in holds; the GPU not whole.
    assert _offered(placement, nvidia_sysfs.root) == _expected(dict(
        [(H100_UUID, ('PGPU', 0))]
        + [(_mig_name(mig), (_mig_rc(mig), 1)) for mig in migs]))


def test_mig_backed_vgpu(placement, fake_nvml, nvidia_sysfs):
    migs = _mig_devices(['3g.40gb'] + ['1g.10gb'] * 4)
    fake_nvml.gpu(H100_UUID).update(mig_mode=1, migs=migs)
    fake_nvml.write()
    for number, vf in enumerate(VFS[:16]):
        nvidia_sysfs.add_vf(H100_ADDRESS, vf, number)
        nvidia_sysfs.add_vgpu_type(vf, MIG_TYPE, MIG_TYPE_NAME, 1,
                                   max_instance=MIG_MAX)

    # One vGPU per MIG device of the type's profile (1g.10gb), on VFs;
    # the MIG devices back them, so none goes to containers beside.
    backing = [mig for mig in migs if mig['name'].endswith('1g.10gb')]
    can_make = min(16, MIG_MAX, len(backing))
    assert can_make == 4
    assert _offered(placement, nvidia_sysfs.root, MIG_TYPE) == _expected(
        dict([(H100_UUID, ('PGPU', 0)),
              ('%s-vgpu-%s' % (H100_UUID, MIG_TYPE), ('VGPU', can_make))]
             + [(_mig_name(mig), (_mig_rc(mig), 0)) for mig in migs]))

