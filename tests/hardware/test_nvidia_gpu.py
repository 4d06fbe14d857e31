"""The nvidia_gpu driver, running the real pynvml against a fake NVML.

The fake libnvidia-ml.so.1 and sysfs tree are in tests/hardware/nvml; our own
code is never patched. See /work/shared/TEST-HARDWARE.md, "NVML for pynvml".
"""

import ctypes
import dataclasses
import json
import logging
import os
import subprocess
import sys
import textwrap
import uuid

import pynvml
import pytest
import stevedore

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.conf import nvidia_gpu as nvidia_gpu_conf
from cyborg_like.drivers import base
from cyborg_like.drivers.nvidia_gpu import nvml
from tests.hardware.nvml.devices import A100_ADDRESS
from tests.hardware.nvml.devices import A100_UUID
from tests.hardware.nvml.devices import GIB
from tests.hardware.nvml.devices import H100_ADDRESS
from tests.hardware.nvml.devices import H100_UUID

from tests.hardware.nvml.symbols import exported_symbols
from tests.hardware.nvml.symbols import layout_mismatches

pytest_plugins = ('tests.hardware.nvml.fixtures',)

H100_CPID = {'cpid_type': 'PCI',
             'cpid_info': inventory.pci_address_info(H100_ADDRESS)}
A100_CPID = {'cpid_type': 'PCI',
             'cpid_info': inventory.pci_address_info(A100_ADDRESS)}
LOGGER = 'cyborg_like.drivers.nvidia_gpu.driver'


def by_address(devices):
    return {d.std_board_info['pci_address']: d for d in devices}


def deployables(device):
    return {d.name: d for d in device.deployables}


def health_by_address(healths):
    return {'%(domain)s:%(bus)s:%(device)s.%(function)s'
            % h.controlpath_id['cpid_info']: h for h in healths}


# -- discovery ---------------------------------------------------------------

def test_loads_through_its_entry_point(nvidia_conf):
    manager = stevedore.driver.DriverManager(
        base.NAMESPACE, 'nvidia_gpu', invoke_on_load=True,
        invoke_args=(nvidia_conf,))
    assert manager.driver.name == 'nvidia_gpu'


def test_discovers_every_gpu_with_its_identity(nvidia_driver):
    devices = by_address(nvidia_driver.discover())

    assert sorted(devices) == [A100_ADDRESS, H100_ADDRESS]
    h100 = devices[H100_ADDRESS]
    assert (h100.type, h100.vendor, h100.model) == (
        'GPU', '0x10de', 'NVIDIA H100 80GB HBM3')
    assert h100.controlpath_id == H100_CPID
    assert h100.std_board_info == {
        'vendor_id': '0x10de', 'product_id': '0x2330',
        'subsystem_id': '0x16c110de', 'pci_address': H100_ADDRESS,
        'numa_node': 1}
    assert h100.vendor_board_info == {
        'uuid': H100_UUID, 'driver_version': '550.54.15',
        'cuda_version': '12.4', 'memory_total_bytes': 80 * GIB,
        'mig_mode': 'enabled', 'mig_layout': ['3g.40gb', '1g.10gb'],
        'index': 0, 'minor': 3}
    a100 = devices[A100_ADDRESS].vendor_board_info
    assert (a100['mig_mode'], a100['mig_layout']) == ('disabled', [])


def test_index_and_minor_number_for_dcgm_labels(nvidia_driver):
    # NVML index order is the data file's; the H100's minor number is not
    # its index (as on hosts where /dev/nvidiaN skips), and the A100's
    # NVML answers NOT_SUPPORTED: no minor, the conductor falls back.
    devices = by_address(nvidia_driver.discover())
    h100 = devices[H100_ADDRESS].vendor_board_info
    a100 = devices[A100_ADDRESS].vendor_board_info
    assert (h100['index'], h100['minor']) == (0, 3)
    assert a100['index'] == 1
    assert 'minor' not in a100
    # Each MIG reading names its GPU instance (dcgm-exporter's GPU_I_ID).
    migs = health_by_address(nvidia_driver.health())[H100_ADDRESS] \
        .utilization['mig_devices']
    assert sorted((m['gpu_instance_id'], m['profile'])
                  for m in migs.values()) == [(2, '3g.40gb'), (9, '1g.10gb')]


def test_inventory_passes_the_wire_schema(nvidia_driver):
    devices = nvidia_driver.discover()
    inventory.validate('host1', [d.to_dict() for d in devices])


def test_numa_node_comes_from_sysfs_when_nvml_has_none(nvidia_driver,
                                                       nvidia_sysfs):
    # GPUS gives the A100 no NVML NUMA node; the sysfs fixture says 0.
    assert by_address(nvidia_driver.discover())[A100_ADDRESS].std_board_info[
        'numa_node'] == 0

    os.remove(nvidia_sysfs.pci(A100_ADDRESS, 'numa_node'))
    assert 'numa_node' not in by_address(
        nvidia_driver.discover())[A100_ADDRESS].std_board_info

    with open(nvidia_sysfs.pci(A100_ADDRESS, 'numa_node'), 'w') as f:
        f.write('-1\n')                 # the kernel's "no NUMA"
    assert 'numa_node' not in by_address(
        nvidia_driver.discover())[A100_ADDRESS].std_board_info


def test_whole_gpu_is_a_pgpu_with_its_pci_function(nvidia_driver):
    a100 = by_address(nvidia_driver.discover())[A100_ADDRESS]

    assert [d.name for d in a100.deployables] == [A100_UUID]
    pgpu = a100.deployables[0]
    assert pgpu.num_accelerators == 1
    assert pgpu.driver_name == 'nvidia_gpu'
    assert pgpu.attributes == {
        'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
        'trait1': 'CUSTOM_GPU_PRODUCT_ID_20B0',
        'trait2': 'CUSTOM_GPU_A100_SXM4_40GB'}
    assert pgpu.attach_handles == [base.AttachHandle(
        'PCI', {'domain': '0000', 'bus': '3b', 'device': '00',
                'function': '0'})]


def test_mig_instances_are_deployables_of_their_gpu(nvidia_driver):
    h100 = deployables(by_address(nvidia_driver.discover())[H100_ADDRESS])

    assert sorted(h100) == sorted([
        H100_UUID, H100_UUID + '-mig-9-0', H100_UUID + '-mig-2-0'])
    # MIG on: the whole GPU is not offered besides its slices.
    assert h100[H100_UUID].num_accelerators == 0
    small = h100[H100_UUID + '-mig-9-0']
    assert small.num_accelerators == 1
    assert small.attributes['rc'] == 'CUSTOM_MIG_1G_10GB'
    assert h100[H100_UUID + '-mig-2-0'].attributes['rc'] == \
        'CUSTOM_MIG_3G_40GB'
    assert small.attach_handles == [base.AttachHandle('MIG', {
        'mig_uuid': 'MIG-0f5c2a4e-1b3d-5e7f-9a1c-2b4d6e8f0a1c',
        'gpu_instance_id': '9', 'compute_instance_id': '0',
        'profile': '1g.10gb'})]


def test_mig_mode_off_shows_no_instances(nvidia_driver, fake_nvml):
    fake_nvml.gpu(H100_UUID)['mig_mode'] = 0
    fake_nvml.write()

    h100 = deployables(by_address(nvidia_driver.discover())[H100_ADDRESS])
    assert list(h100) == [H100_UUID]
    assert h100[H100_UUID].num_accelerators == 1


def test_gpu_without_mig_support(nvidia_driver, fake_nvml):
    del fake_nvml.gpu(A100_UUID)['mig_mode']   # NVML: NOT_SUPPORTED
    fake_nvml.write()

    a100 = by_address(nvidia_driver.discover())[A100_ADDRESS]
    assert a100.vendor_board_info['mig_mode'] == 'unsupported'
    assert a100.deployables[0].num_accelerators == 1


# -- vGPU types and mdevs -----------------------------------------------------

def enable_vgpu_types(conf, addresses):
    """[nvidia_gpu] enabled_vgpu_types and each [vgpu_<type>]
    device_addresses, as an operator writes them: ``{type: [address]}``
    (None: the option left unset)."""
    conf.set_override('enabled_vgpu_types', list(addresses), 'nvidia_gpu')
    nvidia_gpu_conf.register_vgpu_groups(conf)
    for type_id, listed in addresses.items():
        if listed is not None:
            conf.set_override('device_addresses', listed,
                              'vgpu_%s' % type_id)


@pytest.fixture
def vgpu_types(nvidia_sysfs, nvidia_conf):
    """The A100 lists two vGPU types (10 of the 4C or 5 of the 8C); the
    operator enabled the 4C for it."""
    nvidia_sysfs.add_vgpu_type(A100_ADDRESS, 'nvidia-471', 'GRID A100-4C', 10)
    nvidia_sysfs.add_vgpu_type(A100_ADDRESS, 'nvidia-472', 'GRID A100-8C', 5)
    enable_vgpu_types(nvidia_conf, {'nvidia-471': [A100_ADDRESS]})
    return nvidia_sysfs


def vgpu_deployable(nvidia_driver, type_id):
    a100 = deployables(by_address(nvidia_driver.discover())[A100_ADDRESS])
    return a100, a100['%s-vgpu-%s' % (A100_UUID, type_id)]


def test_vgpu_types_are_deployables(nvidia_driver, vgpu_types):
    a100, vgpu = vgpu_deployable(nvidia_driver, 'nvidia-471')

    assert a100[A100_UUID].num_accelerators == 0    # partitioned
    assert vgpu.num_accelerators == 10
    assert vgpu.attributes == {'rc': 'VGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
                               'trait1': 'CUSTOM_VGPU_GRID_A100_4C'}
    assert len(vgpu.attach_handles) == 10
    first = vgpu.attach_handles[0]
    assert first.attach_type == 'MDEV'
    assert first.attach_info['asked_type'] == 'nvidia-471'
    assert first.attach_info['device_api'] == 'vfio-pci'
    assert len({h.attach_info['uuid'] for h in vgpu.attach_handles}) == 10
    # The 8C is not enabled: 10 vGPUs or the whole GPU, never 15 + 1.
    assert sorted(a100) == [A100_UUID, '%s-vgpu-nvidia-471' % A100_UUID]


def test_a_gpu_without_an_enabled_type_is_one_pgpu(nvidia_driver,
                                                   vgpu_types, nvidia_conf):
    enable_vgpu_types(nvidia_conf, {'nvidia-472': [H100_ADDRESS]})
    a100 = deployables(by_address(nvidia_driver.discover())[A100_ADDRESS])
    assert sorted(a100) == [A100_UUID]
    assert a100[A100_UUID].num_accelerators == 1


def test_one_type_enabled_without_addresses_is_every_gpus(
        nvidia_driver, vgpu_types, nvidia_sysfs, nvidia_conf):
    # Nova's rule. The H100 does not list the type (and has MIG on).
    enable_vgpu_types(nvidia_conf, {'nvidia-472': None})
    found = by_address(nvidia_driver.discover())
    a100 = deployables(found[A100_ADDRESS])
    assert a100['%s-vgpu-nvidia-472' % A100_UUID].num_accelerators == 5
    assert not any('-vgpu-' in name
                   for name in deployables(found[H100_ADDRESS]))


def test_a_type_the_gpu_does_not_list_leaves_it_whole(
        nvidia_driver, vgpu_types, nvidia_conf, caplog):
    enable_vgpu_types(nvidia_conf, {'nvidia-999': [A100_ADDRESS]})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        a100 = deployables(by_address(nvidia_driver.discover())[A100_ADDRESS])
    assert sorted(a100) == [A100_UUID]
    assert a100[A100_UUID].num_accelerators == 1
    assert 'does not offer vGPU type nvidia-999 (sysfs lists nvidia-471, ' \
        'nvidia-472)' in caplog.text


def test_changing_the_type_waits_for_bound_vgpus(nvidia_driver, vgpu_types,
                                                 nvidia_conf, caplog):
    _, before = vgpu_deployable(nvidia_driver, 'nvidia-471')
    bound = before.attach_handles[0].attach_info['uuid']
    vgpu_types.add_mdev(A100_ADDRESS, 'nvidia-471', bound)

    enable_vgpu_types(nvidia_conf, {'nvidia-472': [A100_ADDRESS]})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for _ in range(3):
            a100, kept = vgpu_deployable(nvidia_driver, 'nvidia-471')
    assert sorted(a100) == [A100_UUID, '%s-vgpu-nvidia-471' % A100_UUID]
    assert kept.attach_handles == before.attach_handles
    warnings = [r.getMessage() for r in caplog.records
                if 'until they are released' in r.getMessage()]
    assert warnings == [
        'GPU %s (%s) holds 1 vGPU(s) of type nvidia-471: it keeps offering '
        'nvidia-471 until they are released, not nvidia-472 as configured'
        % (A100_UUID, A100_ADDRESS)]

    vgpu_types.drop_mdev(A100_ADDRESS, 'nvidia-471', bound)
    a100, now = vgpu_deployable(nvidia_driver, 'nvidia-472')
    assert sorted(a100) == [A100_UUID, '%s-vgpu-nvidia-472' % A100_UUID]
    assert now.num_accelerators == 5


# -- vGPUs on SR-IOV virtual functions (Ampere and later) ----------------

H100_VFS = ['0000:b0:%02x.%d' % (n // 8, n % 8) for n in range(16)]
H100_VF_TYPES = {1157: 'NVIDIA H100-4C', 1158: 'NVIDIA H100-8C'}


@pytest.fixture
def h100_vfs(nvidia_sysfs):
    for number, vf in enumerate(H100_VFS):
        nvidia_sysfs.add_vf(H100_ADDRESS, vf, number)
    return nvidia_sysfs


@pytest.fixture
def h100_vf_mdevs(h100_vfs):
    """The mdev layout on each VF: the 4C on all 16, the 8C on 10."""
    for number, vf in enumerate(H100_VFS):
        h100_vfs.add_vgpu_type(vf, 'nvidia-1157', 'NVIDIA H100-4C', 1)
        if number < 10:
            h100_vfs.add_vgpu_type(vf, 'nvidia-1158', 'NVIDIA H100-8C', 1)
    return h100_vfs


A100_VFS = ['0000:3c:00.%d' % n for n in range(4)]


@pytest.fixture
def a100_vf_vendor(nvidia_sysfs):
    """Four VFs of the A100 in NVIDIA's vendor-specific interface."""
    for number, vf in enumerate(A100_VFS):
        nvidia_sysfs.add_vf(A100_ADDRESS, vf, number)
        nvidia_sysfs.add_vendor_vgpu(vf, {1157: 'GRID A100-4C',
                                          1158: 'GRID A100-8C'})
    return nvidia_sysfs


@pytest.fixture
def h100_vf_vendor(h100_vfs):
    """NVIDIA's vendor-specific VFIO interface on each VF."""
    for vf in H100_VFS:
        h100_vfs.add_vendor_vgpu(vf, H100_VF_TYPES)
    return h100_vfs


def h100_vgpu(nvidia_driver, type_id):
    h100 = deployables(by_address(nvidia_driver.discover())[H100_ADDRESS])
    return h100, h100.get('%s-vgpu-%s' % (H100_UUID, type_id))


def test_vf_mdev_types_are_one_vgpu_per_vf(nvidia_driver, h100_vf_mdevs,
                                           nvidia_conf):
    assert h100_vgpu(nvidia_driver, 'nvidia-1157')[1] is None  # none enabled
    enable_vgpu_types(nvidia_conf, {'nvidia-1158': [H100_ADDRESS]})
    h100, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1158')

    assert vgpu.num_accelerators == 10
    assert [h.attach_info['parent'] for h in vgpu.attach_handles] == \
        H100_VFS[:10]
    assert {h.attach_type for h in vgpu.attach_handles} == {'MDEV'}
    assert vgpu.attributes['trait1'] == 'CUSTOM_VGPU_NVIDIA_H100_8C'
    assert sorted(h100)[-1] == '%s-vgpu-nvidia-1158' % H100_UUID
    assert h100[H100_UUID].num_accelerators == 0


def test_vf_mdev_capacity_is_the_types_max_instances_not_the_vfs(
        nvidia_driver, h100_vfs, nvidia_conf):
    # Each of the 16 VFs lists one available 4C, but the GPU makes at most
    # 10 of the type (its description's max_instance, as nvidia-smi vgpu
    # and nvmlVgpuTypeGetMaxInstances say): 10 offered, not 16.
    for vf in H100_VFS:
        h100_vfs.add_vgpu_type(vf, 'nvidia-1157', 'NVIDIA H100-4C', 1,
                               max_instance=10)
    enable_vgpu_types(nvidia_conf, {'nvidia-1157': [H100_ADDRESS]})
    _, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1157')
    assert vgpu.num_accelerators == len(vgpu.attach_handles) == 10
    assert [h.attach_info['parent'] for h in vgpu.attach_handles] == \
        H100_VFS[:10]

    # Ours made (bound) are kept; 4C vGPUs made outside us on VFs 12-13
    # count against the 10 and are never offered: 10 - 3 - 2 free left.
    for handle in vgpu.attach_handles[:3]:
        h100_vfs.add_mdev(handle.attach_info['parent'], 'nvidia-1157',
                          handle.attach_info['uuid'])
    for vf in H100_VFS[12:14]:
        h100_vfs.add_mdev(vf, 'nvidia-1157', str(uuid.uuid4()))
    _, now = h100_vgpu(nvidia_driver, 'nvidia-1157')
    parents = [h.attach_info['parent'] for h in now.attach_handles]
    assert now.num_accelerators == len(parents) == 10 - 2
    assert parents == H100_VFS[:8]
    assert now.attach_handles[:3] == vgpu.attach_handles[:3]


def test_vf_capacity_from_nvml_where_sysfs_says_nothing(
        nvidia_driver, h100_vf_mdevs, a100_vf_vendor, fake_nvml,
        nvidia_conf):
    # No description in sysfs: nvmlVgpuTypeGetMaxInstances tells (6 4C on
    # the H100, in the mdev layout; 3 of type 1158 on the A100's VFs, in
    # the vendor-specific one, which has no description at all).
    fake_nvml.gpu(H100_UUID)['vgpu_max_instances'] = '1157:6 1158:5'
    fake_nvml.gpu(A100_UUID)['vgpu_max_instances'] = '1157:10 1158:3'
    fake_nvml.write()
    enable_vgpu_types(nvidia_conf, {'nvidia-1157': [H100_ADDRESS],
                                    'nvidia-1158': [A100_ADDRESS]})
    found = by_address(nvidia_driver.discover())
    h100 = deployables(found[H100_ADDRESS])['%s-vgpu-nvidia-1157'
                                            % H100_UUID]
    a100 = deployables(found[A100_ADDRESS])['%s-vgpu-nvidia-1158'
                                            % A100_UUID]
    assert h100.num_accelerators == len(h100.attach_handles) == 6
    assert a100.num_accelerators == len(a100.attach_handles) == 3
    assert [inventory.pci_address(h.attach_info)
            for h in a100.attach_handles] == A100_VFS[:3]


def test_nvml_max_instances_answers_only_for_types_it_makes(fake_nvml):
    fake_nvml.gpu(H100_UUID)['vgpu_max_instances'] = '1157:6'
    fake_nvml.write()
    # GPU 0 is the H100; the A100 has no vGPU manager (NOT_SUPPORTED).
    with nvml.session():
        assert [nvml.vgpu_max_instances(0, 'nvidia-1157'),
                nvml.vgpu_max_instances(0, 'nvidia-1158'),   # not its type
                nvml.vgpu_max_instances(0, 'nvidia-x'),
                nvml.vgpu_max_instances(1, 'nvidia-1157')] == [
            6, None, None, None]


def test_mdevs_made_by_others_on_the_gpu_lower_its_offer(nvidia_driver,
                                                         vgpu_types):
    # The kernel counts every mdev of the GPU: one made by hand leaves 9
    # the GPU can still make, and its uuid is none we hand out.
    _, before = vgpu_deployable(nvidia_driver, 'nvidia-471')
    ours = before.attach_handles[4].attach_info['uuid']
    vgpu_types.add_mdev(A100_ADDRESS, 'nvidia-471', ours)
    foreign = str(uuid.uuid4())
    vgpu_types.add_mdev(A100_ADDRESS, 'nvidia-471', foreign)

    _, after = vgpu_deployable(nvidia_driver, 'nvidia-471')
    uuids = [h.attach_info['uuid'] for h in after.attach_handles]
    assert after.num_accelerators == len(uuids) == 10 - 1
    assert ours in uuids and foreign not in uuids
    assert uuids == [h.attach_info['uuid']
                     for h in before.attach_handles[:9]]


# -- MIG-backed vGPU types ---------------------------------------------------

MIG_BACKED = {'nvidia-1130': 'NVIDIA H100-1-10C',
              'nvidia-1133': 'NVIDIA H100-3-40C'}


@pytest.fixture
def h100_mig_backed(h100_vfs, fake_nvml, nvidia_conf):
    """MIG on (its profiles answer): the VFs list the MIG-backed types,
    as NVIDIA's vGPU manager lists them with MIG mode on."""
    fake_nvml.gpu(H100_UUID)['mig_profiles'] = 'h100-80gb'
    fake_nvml.write()
    for vf in H100_VFS:
        for type_id, name in MIG_BACKED.items():
            h100_vfs.add_vgpu_type(vf, type_id, name, 1, max_instance=7)
    enable_vgpu_types(nvidia_conf, {'nvidia-1130': [H100_ADDRESS]})
    return h100_vfs


def test_mig_backed_vgpus_are_one_per_mig_device_of_their_profile(
        nvidia_driver, h100_mig_backed):
    h100, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1130')
    # The stand-in's layout: one 1g.10gb and one 3g.40gb MIG device.
    assert vgpu.num_accelerators == len(vgpu.attach_handles) == 1
    [handle] = vgpu.attach_handles
    assert (handle.attach_type, handle.attach_info['parent'],
            handle.attach_info['asked_type']) == ('MDEV', H100_VFS[0],
                                                  'nvidia-1130')
    assert vgpu.attributes['trait1'] == 'CUSTOM_VGPU_NVIDIA_H100_1_10C'
    # The MIG devices back vGPUs now: none is handed to a container, and
    # the whole GPU is not offered beside them.
    assert {name: d.num_accelerators for name, d in h100.items()
            if '-vgpu-' not in name} == {name: 0 for name in h100
                                         if '-vgpu-' not in name}

    nvidia_driver.apply_mig_layout(H100_CPID, ['1g.10gb'] * 7)
    _, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1130')
    assert vgpu.num_accelerators == 7       # 7 MIG devices, max_instance 7
    assert [h.attach_info['parent'] for h in vgpu.attach_handles] == \
        H100_VFS[:7]


def test_mig_backed_type_without_mig_mode_offers_nothing(
        nvidia_driver, h100_mig_backed):
    nvidia_driver.apply_mig_layout(H100_CPID, [])
    h100, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1130')
    assert vgpu.num_accelerators == len(vgpu.attach_handles) == 0
    assert h100[H100_UUID].num_accelerators == 0


def test_vf_mdev_is_made_on_its_vf_and_kept_while_bound(
        nvidia_driver, h100_vf_mdevs, nvidia_conf):
    enable_vgpu_types(nvidia_conf, {'nvidia-1157': [H100_ADDRESS]})
    _, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1157')
    handle = vgpu.attach_handles[5]
    mdev_uuid = handle.attach_info['uuid']

    nvidia_driver.prepare_attach_handle(H100_CPID, dataclasses.asdict(handle))
    create = h100_vf_mdevs.pci(H100_VFS[5], 'mdev_supported_types',
                               'nvidia-1157', 'create')
    assert h100_vf_mdevs.read(create) == mdev_uuid
    h100_vf_mdevs.add_mdev(H100_VFS[5], 'nvidia-1157', mdev_uuid)

    _, after = h100_vgpu(nvidia_driver, 'nvidia-1157')
    assert after.attach_handles == vgpu.attach_handles
    # Bound: another type must wait for its release.
    enable_vgpu_types(nvidia_conf, {'nvidia-1158': [H100_ADDRESS]})
    h100, kept = h100_vgpu(nvidia_driver, 'nvidia-1157')
    assert kept.num_accelerators == 16
    assert '%s-vgpu-nvidia-1158' % H100_UUID not in h100

    nvidia_driver.release_attach_handle(H100_CPID, handle)
    assert h100_vf_mdevs.read(h100_vf_mdevs.mdev(mdev_uuid, 'remove')) == '1'


def test_a_handle_naming_another_gpus_vf_is_refused(nvidia_driver,
                                                    h100_vf_mdevs):
    with pytest.raises(exception.DriverError, match='no VF of GPU'):
        nvidia_driver.prepare_attach_handle(A100_CPID, {
            'attach_type': 'MDEV', 'attach_info': {
                'asked_type': 'nvidia-1157', 'parent': H100_VFS[0],
                'uuid': '2f6d1a0e-5b7c-4e8d-9f0a-1b2c3d4e5f60'}})


def test_vendor_interface_vfs_are_pci_handles(nvidia_driver, h100_vf_vendor,
                                              nvidia_conf):
    enable_vgpu_types(nvidia_conf, {'nvidia-1157': [H100_ADDRESS]})
    h100, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1157')

    assert vgpu.num_accelerators == 16
    assert [(h.attach_type, inventory.pci_address(h.attach_info),
             h.attach_info['asked_type']) for h in vgpu.attach_handles] == [
        ('PCI', vf, 'nvidia-1157') for vf in H100_VFS]
    assert vgpu.attributes['trait1'] == 'CUSTOM_VGPU_NVIDIA_H100_4C'


def test_vendor_interface_vf_takes_the_type_and_gives_it_back(
        nvidia_driver, h100_vf_vendor, nvidia_conf, caplog):
    enable_vgpu_types(nvidia_conf, {'nvidia-1157': [H100_ADDRESS]})
    _, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1157')
    handle = dataclasses.asdict(vgpu.attach_handles[2])
    current = h100_vf_vendor.pci(H100_VFS[2], 'nvidia', 'current_vgpu_type')

    nvidia_driver.prepare_attach_handle(H100_CPID, handle)
    assert h100_vf_vendor.read(current) == '1157'
    nvidia_driver.prepare_attach_handle(H100_CPID, handle)    # idempotent
    assert h100_vf_vendor.read(current) == '1157'

    # While it is held, the GPU keeps offering the 4C.
    enable_vgpu_types(nvidia_conf, {'nvidia-1158': [H100_ADDRESS]})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        h100, kept = h100_vgpu(nvidia_driver, 'nvidia-1157')
    assert kept.num_accelerators == 16
    assert 'holds 1 vGPU(s) of type nvidia-1157' in caplog.text

    nvidia_driver.release_attach_handle(H100_CPID, handle)
    assert h100_vf_vendor.read(current) == '0'
    h100, now = h100_vgpu(nvidia_driver, 'nvidia-1158')
    assert now.num_accelerators == 16


def test_vendor_interface_vf_of_another_type_is_refused(
        nvidia_driver, h100_vf_vendor, nvidia_conf):
    enable_vgpu_types(nvidia_conf, {'nvidia-1157': [H100_ADDRESS]})
    _, vgpu = h100_vgpu(nvidia_driver, 'nvidia-1157')
    handle = dataclasses.asdict(vgpu.attach_handles[0])
    current = h100_vf_vendor.pci(H100_VFS[0], 'nvidia', 'current_vgpu_type')
    with open(current, 'w') as f:
        f.write('1158\n')       # made by hand, outside the service
    with pytest.raises(exception.DriverError,
                       match='is a vGPU of type nvidia-1158 already'):
        nvidia_driver.prepare_attach_handle(H100_CPID, handle)
    nvidia_driver.release_attach_handle(H100_CPID, handle)   # not ours
    assert h100_vf_vendor.read(current) == '1158\n'


def test_a_gpu_listed_for_two_types_is_a_config_error(
        nvidia_driver, vgpu_types, nvidia_conf):
    enable_vgpu_types(nvidia_conf, {'nvidia-471': [A100_ADDRESS],
                                    'nvidia-472': ['3B:00.0']})
    with pytest.raises(exception.DriverError,
                       match=r'0000:3b:00.0 is listed in both \[vgpu_'
                             r'nvidia-471\] and \[vgpu_nvidia-472\]'):
        nvidia_driver.discover()


def test_mdev_uuids_are_stable_across_discoveries(nvidia_driver, vgpu_types):
    _, first = vgpu_deployable(nvidia_driver, 'nvidia-471')
    _, again = vgpu_deployable(nvidia_driver, 'nvidia-471')
    assert first.attach_handles == again.attach_handles


def test_prepare_creates_the_mdev_and_release_removes_it(nvidia_driver,
                                                         vgpu_types):
    _, vgpu = vgpu_deployable(nvidia_driver, 'nvidia-471')
    handle = vgpu.attach_handles[3]
    mdev_uuid = handle.attach_info['uuid']

    info = nvidia_driver.prepare_attach_handle(A100_CPID,
                                               dataclasses.asdict(handle))

    assert info == handle.attach_info
    create = vgpu_types.pci(A100_ADDRESS, 'mdev_supported_types',
                            'nvidia-471', 'create')
    assert vgpu_types.read(create) == mdev_uuid
    vgpu_types.add_mdev(A100_ADDRESS, 'nvidia-471', mdev_uuid)  # the kernel

    nvidia_driver.release_attach_handle(A100_CPID, handle)
    assert vgpu_types.read(vgpu_types.mdev(mdev_uuid, 'remove')) == '1'


def test_a_bound_vgpu_keeps_its_handle(nvidia_driver, vgpu_types):
    _, before = vgpu_deployable(nvidia_driver, 'nvidia-471')
    handle = before.attach_handles[0]
    vgpu_types.add_mdev(A100_ADDRESS, 'nvidia-471',
                        handle.attach_info['uuid'])

    _, after = vgpu_deployable(nvidia_driver, 'nvidia-471')
    assert after.num_accelerators == 10
    assert after.attach_handles == before.attach_handles


def test_prepare_and_release_are_idempotent(nvidia_driver, vgpu_types):
    _, vgpu = vgpu_deployable(nvidia_driver, 'nvidia-471')
    handle = vgpu.attach_handles[0]
    mdev_uuid = handle.attach_info['uuid']
    create = vgpu_types.pci(A100_ADDRESS, 'mdev_supported_types',
                            'nvidia-471', 'create')

    nvidia_driver.release_attach_handle(A100_CPID, handle)  # none to remove
    vgpu_types.add_mdev(A100_ADDRESS, 'nvidia-471', mdev_uuid)
    nvidia_driver.prepare_attach_handle(A100_CPID, handle)   # exists already
    assert vgpu_types.read(create) == ''


@pytest.mark.parametrize('info', [
    {'asked_type': 'nvidia-999'},                      # not on this GPU
    {'asked_type': '../../../../mdev/devices'},        # path from the wire
    {'asked_type': 'nvidia-471', 'uuid': '../../etc'},
])
def test_prepare_refuses_bad_handles(nvidia_driver, vgpu_types, info):
    with pytest.raises(exception.DriverError, match='cannot create vGPU'):
        nvidia_driver.prepare_attach_handle(
            A100_CPID, {'attach_type': 'MDEV', 'attach_info': info})


def test_pci_and_mig_handles_need_no_preparation(nvidia_driver, nvidia_sysfs):
    h100 = deployables(by_address(nvidia_driver.discover())[H100_ADDRESS])
    for deployable in h100.values():
        handle = deployable.attach_handles[0]
        assert nvidia_driver.prepare_attach_handle(H100_CPID, handle) == \
            handle.attach_info
        nvidia_driver.release_attach_handle(H100_CPID, handle)
    assert not os.path.exists(os.path.join(nvidia_sysfs.root, 'bus', 'mdev'))


# -- health ------------------------------------------------------------------

def test_health_reports_load_and_sensors(nvidia_driver):
    healths = health_by_address(nvidia_driver.health())

    a100 = healths[A100_ADDRESS]
    assert a100.controlpath_id == A100_CPID
    assert (a100.healthy, a100.reasons) == (True, [])
    assert a100.utilization == {
        'gpu_percent': 37, 'memory_percent': 12,
        'memory_used_bytes': 4 * GIB, 'memory_total_bytes': 40 * GIB,
        'temperature_c': 35, 'power_w': 61.5,
        'ecc_uncorrected_volatile': 0, 'retired_pages_pending': False,
        'remapped_rows_pending': False,
        # Read for dcgm-exporter's series, not judged: two uncorrected
        # errors in its life leave the GPU healthy.
        'ecc_uncorrected_aggregate': 2, 'sm_clock_mhz': 1410,
        'memory_clock_mhz': 1215}
    # MIG mode: NVML has no whole-GPU utilization; H100 retires no pages.
    h100 = healths[H100_ADDRESS].utilization
    assert 'gpu_percent' not in h100
    assert 'retired_pages_pending' not in h100
    assert h100['temperature_c'] == 41


@pytest.mark.parametrize('change, reason', [
    ({'ecc_uncorrected_volatile': 2},
     '2 uncorrectable ECC error(s) since the driver loaded'),
    ({'retired_pages_pending': 1},
     'retired memory pages are pending: reset the GPU'),
    ({'remapped_rows': '0 1 1 0'},
     'memory row remapping is pending: reset the GPU'),
    ({'remapped_rows': '0 8 0 1'},
     'memory row remapping failed: the GPU needs service'),
    ({'temperature': 86}, 'temperature 86 C is above the 85 C threshold'),
], ids=['ecc', 'retired-pages', 'remap-pending', 'remap-failed', 'hot'])
# (explicit ids: gabbi's pytest plugin takes any id with ':' for its own)
def test_health_verdicts(nvidia_driver, fake_nvml, change, reason):
    fake_nvml.gpu(A100_UUID).update(change)
    fake_nvml.write()

    healths = health_by_address(nvidia_driver.health())
    assert (healths[A100_ADDRESS].healthy,
            healths[A100_ADDRESS].reasons) == (False, [reason])
    assert healths[H100_ADDRESS].healthy


def test_temperature_threshold_is_configurable(nvidia_driver, fake_nvml,
                                               nvidia_conf):
    nvidia_conf.set_override('temperature_threshold', 30, 'nvidia_gpu')
    healths = health_by_address(nvidia_driver.health())
    assert healths[A100_ADDRESS].reasons == [
        'temperature 35 C is above the 30 C threshold']
    assert not healths[H100_ADDRESS].healthy


def test_gpu_without_ecc_or_sensors_is_healthy(nvidia_driver, fake_nvml):
    a100 = fake_nvml.gpu(A100_UUID)
    for key in ('ecc_uncorrected_volatile', 'ecc_uncorrected_aggregate',
                'retired_pages_pending', 'remapped_rows', 'clock_sm',
                'clock_mem'):
        del a100[key]
    a100['errors'] = {'nvmlDeviceGetTemperatureV': 'NOT_SUPPORTED',
                      'nvmlDeviceGetTemperature': 'NOT_SUPPORTED',
                      'nvmlDeviceGetPowerUsage': 'NOT_SUPPORTED'}
    fake_nvml.write()

    health = health_by_address(nvidia_driver.health())[A100_ADDRESS]
    assert health.healthy
    # ... and says what it could not look at, rather than that it passed.
    assert health.unchecked == ['ecc_uncorrected', 'memory_repair',
                                'temperature']
    assert sorted(health.utilization) == [
        'gpu_percent', 'memory_percent', 'memory_total_bytes',
        'memory_used_bytes']


@pytest.mark.parametrize('error', ['NOT_SUPPORTED',
                                   'ARGUMENT_VERSION_MISMATCH'])
def test_newer_queries_unanswered_fall_back_to_the_older_ones(
        nvidia_driver, nvidia_conf, fake_nvml, error):
    # A newer libnvidia-ml in front of an older driver or GPU exports the
    # newer functions and answers them with an error: the older calls
    # still give the temperature and the memory, and the health built on
    # them.
    a100 = fake_nvml.gpu(A100_UUID)
    a100['errors'] = {'nvmlDeviceGetTemperatureV': error,
                      'nvmlDeviceGetMemoryInfo_v2': error}
    fake_nvml.write()

    health = health_by_address(nvidia_driver.health())[A100_ADDRESS]
    assert 'temperature' not in health.unchecked
    assert health.utilization['temperature_c'] == a100['temperature']
    assert health.utilization['memory_total_bytes'] > 0
    nvidia_conf.set_override('temperature_threshold', a100['temperature'] - 1,
                             'nvidia_gpu')
    assert not health_by_address(
        nvidia_driver.health())[A100_ADDRESS].healthy


def test_a_gpu_with_every_check_lists_none_unchecked(nvidia_driver,
                                                      fake_nvml):
    # The A100 retires pages and remaps rows; the H100 only remaps rows,
    # which is enough: one of the two is the memory repair check.
    healths = health_by_address(nvidia_driver.health())
    assert healths[A100_ADDRESS].unchecked == []
    assert healths[H100_ADDRESS].unchecked == []


OLD_DRIVER_SCRIPT = textwrap.dedent('''
    import ctypes, dataclasses, json, sys
    ctypes.CDLL(sys.argv[1])      # by path; pynvml then finds it by soname
    from oslo_config import cfg
    from cyborg_like.conf import nvidia_gpu as nvidia_gpu_conf
    from cyborg_like.drivers import nvidia_gpu

    conf = cfg.ConfigOpts()
    nvidia_gpu_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override('sysfs_root', sys.argv[2], group='nvidia_gpu')
    driver = nvidia_gpu.NvidiaGPUDriver(conf)
    json.dump({'devices': [dataclasses.asdict(d) for d in driver.discover()],
               'health': [h.to_dict() for h in driver.health()]},
              sys.stdout)
''')
OLD_DRIVER_MISSING = {'nvmlDeviceGetTemperatureV', 'nvmlDeviceGetRemappedRows',
                      'nvmlDeviceGetMemoryInfo_v2'}


def test_an_older_driver_switches_off_only_what_it_lacks(
        fake_nvml, nvidia_sysfs, nvidia_driver, tmp_path):
    """A driver from before Ampere does not export the newer functions at
    all (pynvml: FunctionNotFound): discovery still finds every GPU, the
    temperature comes from the older function, memory from the first
    struct version, and the checks that needed the rest say so."""
    from tests.hardware.nvml import fixtures
    old = fixtures.build_fake_nvml(tmp_path, ['FAKE_NVML_OLD_DRIVER'])
    assert OLD_DRIVER_MISSING.isdisjoint(exported_symbols(old))
    assert OLD_DRIVER_MISSING <= exported_symbols(fake_nvml.lib.path)
    # A library never unloads, so the old one runs in a process of its own.
    result = subprocess.run(
        [sys.executable, '-c', OLD_DRIVER_SCRIPT, old, nvidia_sysfs.root],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, FAKE_NVML_DATA=fake_nvml.data_path))
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)

    current = by_address(nvidia_driver.discover())
    old_devices = {d['std_board_info']['pci_address']: d
                   for d in found['devices']}
    assert sorted(old_devices) == sorted(current)
    for address, device in old_devices.items():
        assert device['deployables'] == [
            dataclasses.asdict(d) for d in current[address].deployables]

    healths = {'%(domain)s:%(bus)s:%(device)s.%(function)s'
               % h['controlpath_id']['cpid_info']: h for h in found['health']}
    h100, a100 = healths[H100_ADDRESS], healths[A100_ADDRESS]
    assert (h100['utilization']['temperature_c'],
            a100['utilization']['temperature_c']) == (41, 35)
    # Version 1 of the memory struct counts the reserved memory as used.
    assert a100['utilization']['memory_used_bytes'] == \
        4 * GIB + 400 * 1024 ** 2
    # The H100 only remaps rows, which this driver cannot read; the A100
    # still reports retired pages.
    assert h100['unchecked'] == ['memory_repair']
    assert a100['unchecked'] == []
    assert h100['healthy'] and a100['healthy']


# -- failures ----------------------------------------------------------------

def test_lost_gpu_is_kept_unhealthy_and_others_carry_on(
        nvidia_driver, fake_nvml, caplog):
    before = by_address(nvidia_driver.discover())
    fake_nvml.gpu(A100_UUID)['lost'] = 1
    fake_nvml.write()

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        after = by_address(nvidia_driver.discover())
        healths = health_by_address(nvidia_driver.health())

    assert after == before      # a passing fault never drops a device
    assert healths[A100_ADDRESS].healthy is False
    assert healths[A100_ADDRESS].reasons == [
        'NVML cannot reach the GPU: GPU is lost']
    assert healths[H100_ADDRESS].healthy
    assert 'NVIDIA GPU 1 does not answer NVML (GPU is lost)' in caplog.text


def test_gpu_leaving_the_middle_of_the_list_shifts_nothing(
        nvidia_driver, fake_nvml, caplog):
    """NVML indexes shift when a GPU leaves the bus: the GPU that was
    third is second now. When that one is lost too, it is the one kept,
    under its own address, and the GPU that left is gone."""
    third = dict(fake_nvml.gpu(A100_UUID),
                 uuid='GPU-5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f',
                 bus_id='00000000:D8:00.0')
    fake_nvml.gpus.append(third)
    fake_nvml.write()
    before = by_address(nvidia_driver.discover())
    assert sorted(before) == [A100_ADDRESS, H100_ADDRESS, '0000:d8:00.0']

    fake_nvml.gpus.remove(fake_nvml.gpu(A100_UUID))     # off the bus
    third['lost'] = 1                                   # index 1 now
    fake_nvml.write()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        after = by_address(nvidia_driver.discover())
        healths = health_by_address(nvidia_driver.health())

    assert after == {address: before[address]
                     for address in (H100_ADDRESS, '0000:d8:00.0')}
    assert healths['0000:d8:00.0'].healthy is False
    assert healths['0000:d8:00.0'].reasons == [
        'NVML cannot reach the GPU: GPU is lost']
    assert healths[H100_ADDRESS].healthy
    assert A100_ADDRESS not in healths
    assert 'NVIDIA GPU %s (%s) is gone from NVML' % (
        A100_UUID, A100_ADDRESS) in caplog.text

    # Back on the bus and answering: read afresh, nothing kept -- its
    # NVML index is the shifted one now (dcgm-exporter's ``gpu`` shifts
    # the same way).
    third['lost'] = 0
    fake_nvml.write()
    again = by_address(nvidia_driver.discover())
    assert again['0000:d8:00.0'].vendor_board_info['index'] == 1
    after['0000:d8:00.0'].vendor_board_info['index'] = 1
    assert again == after


def test_lost_gpu_never_seen_is_left_out(nvidia_driver, fake_nvml, caplog):
    fake_nvml.gpu(H100_UUID)['lost'] = 1
    fake_nvml.write()

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        devices = nvidia_driver.discover()
        healths = nvidia_driver.health()

    assert [d.model for d in devices] == ['NVIDIA A100-SXM4-40GB']
    assert list(health_by_address(healths)) == [A100_ADDRESS]
    assert 'leaving it out' in caplog.text


def test_lost_while_taking_a_handle(nvidia_driver, fake_nvml):
    fake_nvml.gpu(H100_UUID)['errors'] = {
        'nvmlDeviceGetHandleByIndex_v2': 'GPU_IS_LOST'}
    fake_nvml.write()
    devices = nvidia_driver.discover()
    assert [d.model for d in devices] == ['NVIDIA A100-SXM4-40GB']


def test_driver_not_loaded_raises_so_the_agent_keeps_devices(
        nvidia_driver, fake_nvml):
    fake_nvml.system['error.nvmlInitWithFlags'] = 'DRIVER_NOT_LOADED'
    fake_nvml.write()
    with pytest.raises(exception.DriverError, match='Driver Not Loaded'):
        nvidia_driver.discover()


NO_LIBRARY_SCRIPT = textwrap.dedent('''
    import ctypes.util, json, logging, sys
    from oslo_config import cfg
    from cyborg_like.conf import nvidia_gpu as nvidia_gpu_conf
    from cyborg_like.drivers import nvidia_gpu

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger().addHandler(handler)
    conf = cfg.ConfigOpts()
    nvidia_gpu_conf.register_opts(conf)
    conf([], default_config_files=[])
    driver = nvidia_gpu.NvidiaGPUDriver(conf)
    json.dump({
        'real_library': ctypes.util.find_library('nvidia-ml'),
        'results': [driver.discover(), driver.health(), driver.discover()],
        'logs': [[r.levelname, r.getMessage()] for r in records],
    }, sys.stdout)
''')


def test_host_without_nvml_reports_nothing_and_warns_once():
    # A library never unloads, so this runs where the fake was never loaded.
    env = {k: v for k, v in os.environ.items()
           if k not in ('LD_LIBRARY_PATH', 'LD_PRELOAD', 'FAKE_NVML_DATA')}
    result = subprocess.run([sys.executable, '-c', NO_LIBRARY_SCRIPT],
                            env=env, capture_output=True, text=True,
                            check=True)
    report = json.loads(result.stdout)

    assert report['real_library'] is None, (
        'this host has a real NVML (%s): the test needs a host without one'
        % report['real_library'])
    assert report['results'] == [[], [], []]
    assert report['logs'] == [[
        'WARNING', 'libnvidia-ml.so.1 is not installed: this host has no '
        'NVIDIA driver, so the nvidia_gpu driver reports no GPUs']]


# -- the fake itself ---------------------------------------------------------

def pynvml_symbols_used(monkeypatch, run):
    """The NVML symbols pynvml looks up while ``run()`` goes."""
    names = []
    real = pynvml._nvmlGetFunctionPointer

    def recording(name):
        names.append(name)
        return real(name)
    monkeypatch.setattr(pynvml, '_nvmlGetFunctionPointer', recording)
    run()
    return set(names)


def test_fake_exports_every_symbol_the_driver_reaches(
        nvidia_driver, fake_nvml, vgpu_types, monkeypatch):
    """Fails when pynvml (or the driver) starts calling an NVML function the
    fake lacks: the driver would meet NVMLError_FunctionNotFound, which it
    takes as "not supported by this GPU", and the tests would pass blind."""
    def run():
        devices = nvidia_driver.discover()
        nvidia_driver.health()
        for device in devices:
            for deployable in device.deployables:
                for handle in deployable.attach_handles[:1]:
                    nvidia_driver.prepare_attach_handle(device.controlpath_id,
                                                 handle)
        fake_nvml.gpu(A100_UUID)['lost'] = 1       # the error paths too
        fake_nvml.write()
        nvidia_driver.discover()
        nvidia_driver.health()
        str(pynvml.NVMLError(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH))

    used = pynvml_symbols_used(monkeypatch, run)

    assert 'nvmlDeviceGetMigDeviceHandleByIndex' in used
    assert 'nvmlErrorString' in used
    missing = used - exported_symbols(fake_nvml.lib.path)
    assert not missing, 'add these to fake_nvml.c: %s' % sorted(missing)


@pytest.mark.parametrize('struct, c_name', [
    (pynvml.nvmlPciInfo_t, 'nvmlPciInfo_t'),
    (pynvml.c_nvmlMemory_t, 'nvmlMemory_t'),
    (pynvml.c_nvmlMemory_v2_t, 'nvmlMemory_v2_t'),
    (pynvml.c_nvmlUtilization_t, 'nvmlUtilization_t'),
    (pynvml.c_nvmlTemperature_v1_t, 'nvmlTemperature_v1_t'),
])
def test_fake_structs_match_pynvml(fake_nvml_lib, struct, c_name):
    assert layout_mismatches(fake_nvml_lib, struct, c_name) == []


def test_fake_checks_struct_versions_and_buffer_sizes(fake_nvml):
    lib = fake_nvml.lib
    pynvml.nvmlInit()
    try:
        gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_ArgumentVersionMismatch):
            pynvml.nvmlDeviceGetMemoryInfo(gpu, version=0x01000028)
        assert pynvml.nvmlDeviceGetMemoryInfo(
            gpu, version=pynvml.nvmlMemory_v2).total == 80 * GIB

        short = ctypes.create_string_buffer(8)
        assert lib.nvmlDeviceGetName(gpu, short, 8) == \
            pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        assert lib.nvmlDeviceGetUUID(gpu, short, 8) == \
            pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        assert pynvml.nvmlDeviceGetUUID(gpu) == H100_UUID
    finally:
        pynvml.nvmlShutdown()


def test_fake_refuses_data_it_does_not_understand(fake_nvml):
    fake_nvml.gpu(H100_UUID)['temprature'] = 50
    fake_nvml.write()
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlInit()
