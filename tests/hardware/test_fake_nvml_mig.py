"""MIG management in the fake NVML (tests/hardware/nvml/fake_nvml.c), driven
through the real pynvml: profiles, GPU and compute instances, the MIG
devices they make, the errors an A100 gives, and the state that outlives
the process. The cyborg_like driver is not involved here."""

import ctypes
import json
import os
import re
import subprocess
import sys
import textwrap

import pynvml
import pytest

from tests.hardware.nvml.devices import A100_UUID
from tests.hardware.nvml.devices import GIB
from tests.hardware.nvml.devices import H100_UUID

from tests.hardware.nvml.symbols import exported_symbols
from tests.hardware.nvml.symbols import layout_mismatches

pytest_plugins = ('tests.hardware.nvml.fixtures',)

MIB = 1024 ** 2
A100_NAME = 'NVIDIA A100-SXM4-80GB'
A100_INDEX = 1                  # devices.GPUS: the H100 first
SHARED = pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
MIG_UUID = re.compile(r'^MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-'
                      r'[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
COMPUTE_PROFILE = {1: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                   2: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
                   3: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
                   4: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
                   7: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE}

# NVML_GPU_INSTANCE_PROFILE_* index: (id, name, slices, instances, MB)
A100_80GB_PROFILES = {
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: (19, '1g.10gb', 1, 7, 9856),
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
        (20, '1g.10gb+me', 1, 1, 9856),
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2:
        (15, '1g.20gb', 1, 4, 19968),
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: (14, '2g.20gb', 2, 3, 19968),
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: (9, '3g.40gb', 3, 2, 40192),
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: (5, '4g.40gb', 4, 1, 40192),
    pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: (0, '7g.80gb', 7, 1, 80384),
}
P1G, P1G_20, P2G, P3G, P4G, P7G = (
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE,
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE,
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE,
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE,
    pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE)


@pytest.fixture
def a100(fake_nvml):
    """devices.GPUS's A100 made an A100-SXM4-80GB with its MIG profiles;
    MIG mode off."""
    gpu = fake_nvml.gpu(A100_UUID)
    gpu.update(name=A100_NAME, pci_device_id='0x20B210DE',
               memory_total=80 * GIB, mig_profiles='a100-80gb')
    fake_nvml.write()
    return gpu


@pytest.fixture
def nvml():
    """An nvmlInit for the test (request it after the data is written)."""
    pynvml.nvmlInit()
    yield
    pynvml.nvmlShutdown()


def reload():
    """What a new client sees: the data and state files read again."""
    pynvml.nvmlShutdown()
    pynvml.nvmlInit()


def the_a100():
    return pynvml.nvmlDeviceGetHandleByIndex(A100_INDEX)


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def address(handle):
    return ctypes.cast(handle, ctypes.c_void_p).value


def enable_mig(gpu):
    assert pynvml.nvmlDeviceSetMigMode(
        gpu, pynvml.NVML_DEVICE_MIG_ENABLE) == pynvml.NVML_SUCCESS


def create_gi(gpu, index):
    info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu, index)
    return pynvml.nvmlDeviceCreateGpuInstance(gpu, info.id)


def create_ci(gpu_instance):
    info = pynvml.nvmlGpuInstanceGetInfo(gpu_instance)
    slices = next(p[2] for p in A100_80GB_PROFILES.values()
                  if p[0] == info.profileId)
    compute = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gpu_instance, COMPUTE_PROFILE[slices], SHARED)
    return pynvml.nvmlGpuInstanceCreateComputeInstance(gpu_instance,
                                                       compute.id)


def create(gpu, index):
    """A MIG device: a GPU instance and its one compute instance."""
    gpu_instance = create_gi(gpu, index)
    return gpu_instance, create_ci(gpu_instance)


def mig_devices(gpu):
    """What nvidia-smi (and the driver) see: slot -> MIG device."""
    found = {}
    for slot in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(gpu)):
        try:
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, slot)
        except pynvml.NVMLError_NotFound:
            continue
        found[slot] = {
            'name': pynvml.nvmlDeviceGetName(mig),
            'uuid': pynvml.nvmlDeviceGetUUID(mig),
            'gi': pynvml.nvmlDeviceGetGpuInstanceId(mig),
            'ci': pynvml.nvmlDeviceGetComputeInstanceId(mig),
            'memory': pynvml.nvmlDeviceGetMemoryInfo(mig).total}
    return found


def gpu_instances(gpu, index):
    info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu, index)
    found = (pynvml.c_nvmlGpuInstance_t * info.instanceCount)()
    count = ctypes.c_uint()
    pynvml.nvmlDeviceGetGpuInstances(gpu, info.id, found,
                                     ctypes.byref(count))
    return found[:count.value]


# -- MIG mode ----------------------------------------------------------------

def test_mig_mode_changes_at_once(a100, fake_nvml, nvml):
    gpu = the_a100()
    before = fake_nvml.mig_changes()
    assert pynvml.nvmlDeviceGetMigMode(gpu) == [0, 0]

    enable_mig(gpu)

    assert pynvml.nvmlDeviceGetMigMode(gpu) == [1, 1]
    assert pynvml.nvmlDeviceGetMaxMigDeviceCount(gpu) == 7
    assert mig_devices(gpu) == {}       # no instances yet
    assert fake_nvml.mig_changes() == before + 1
    enable_mig(gpu)                     # already on: no change
    assert fake_nvml.mig_changes() == before + 1


def test_mig_mode_pending_until_a_reset(a100, fake_nvml):
    a100['mig_reset_required'] = 1
    fake_nvml.write()
    pynvml.nvmlInit()
    try:
        gpu = the_a100()
        status = pynvml.nvmlDeviceSetMigMode(gpu,
                                             pynvml.NVML_DEVICE_MIG_ENABLE)
        assert status == pynvml.NVML_ERROR_RESET_REQUIRED
        assert pynvml.nvmlDeviceGetMigMode(gpu) == [0, 1]
        # Still off: no instances (NVML documents NOT_SUPPORTED).
        with pytest.raises(pynvml.NVMLError_NotSupported):
            create_gi(gpu, P1G)
        reload()                        # pending survives, still pending
        assert pynvml.nvmlDeviceGetMigMode(the_a100()) == [0, 1]
    finally:
        pynvml.nvmlShutdown()


def test_a_gpu_without_mig_profiles_manages_nothing(fake_nvml, nvml):
    h100 = pynvml.nvmlDeviceGetHandleByIndex(0)     # mig_mode 1, no profiles
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h100, P1G)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceCreateGpuInstance(h100, 19)
    # Its data-file MIG devices are still there.
    assert [m['gi'] for m in mig_devices(h100).values()] == [9, 2]


def test_a_gpu_without_mig_profiles_keeps_its_data_file_mig_devices(
        fake_nvml, nvml):
    """Its mode goes to the state file, its [mig] devices stay the data
    file's (there are no instances to keep)."""
    h100 = pynvml.nvmlDeviceGetHandleByIndex(0)
    pynvml.nvmlDeviceSetMigMode(h100, pynvml.NVML_DEVICE_MIG_DISABLE)
    reload()
    h100 = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert pynvml.nvmlDeviceGetMigMode(h100) == [0, 0]
    pynvml.nvmlDeviceSetMigMode(h100, pynvml.NVML_DEVICE_MIG_ENABLE)
    reload()
    h100 = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert [m['gi'] for m in mig_devices(h100).values()] == [9, 2]


def test_a_gpu_without_mig_mode_cannot_set_it(fake_nvml):
    del fake_nvml.gpu(A100_UUID)['mig_mode']
    fake_nvml.write()
    pynvml.nvmlInit()
    try:
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceSetMigMode(the_a100(), 1)
    finally:
        pynvml.nvmlShutdown()


# -- profiles ----------------------------------------------------------------

def test_profile_info_v1_and_v2(a100, nvml):
    gpu = the_a100()            # MIG mode off: profiles answer all the same
    for index in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        if index not in A100_80GB_PROFILES:
            for version in (1, 2):
                with pytest.raises(pynvml.NVMLError_NotSupported):
                    pynvml.nvmlDeviceGetGpuInstanceProfileInfo(
                        gpu, index, version=version)
            continue
        profile_id, name, slices, instances, megabytes = \
            A100_80GB_PROFILES[index]
        v1 = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu, index,
                                                        version=1)
        v2 = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu, index)
        for info in (v1, v2):
            assert (info.id, info.sliceCount, info.instanceCount,
                    info.memorySizeMB) == (profile_id, slices, instances,
                                           megabytes), name
            assert info.multiprocessorCount == 14 * slices
        assert text(v2.name) == 'MIG ' + name
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(
            gpu, pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT)


@pytest.mark.parametrize('table, names', [
    ('a100-40gb', ['1g.5gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb',
                   None, None, '1g.5gb+me', None, None]),
    ('a100-80gb', ['1g.10gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb',
                   None, None, '1g.10gb+me', None, '1g.20gb']),
    ('h100-80gb', ['1g.10gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb',
                   None, None, '1g.10gb+me', None, '1g.20gb']),
])
def test_each_table_names_its_profiles(fake_nvml, table, names):
    fake_nvml.gpu(A100_UUID)['mig_profiles'] = table
    fake_nvml.write()
    pynvml.nvmlInit()
    try:
        found = []
        for index in range(len(names)):
            try:
                info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(
                    the_a100(), index)
            except pynvml.NVMLError_NotSupported:
                found.append(None)
            else:
                found.append(text(info.name)[len('MIG '):])
        assert found == names
    finally:
        pynvml.nvmlShutdown()


def test_profile_info_v2_checks_its_version(a100, fake_nvml, nvml):
    info = pynvml.c_nvmlGpuInstanceProfileInfo_v2_t()
    info.version = 0x01000098
    assert fake_nvml.lib.nvmlDeviceGetGpuInstanceProfileInfoV(
        the_a100(), P1G, ctypes.byref(info)) == \
        pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    gpu_instance = (enable_mig(the_a100()), create_gi(the_a100(), P1G))[1]
    compute = pynvml.c_nvmlComputeInstanceProfileInfo_v2_t()
    compute.version = 0x01000088
    assert fake_nvml.lib.nvmlGpuInstanceGetComputeInstanceProfileInfoV(
        gpu_instance, 0, SHARED, ctypes.byref(compute)) == \
        pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH


def test_unknown_mig_profiles_fail_init(fake_nvml):
    fake_nvml.gpu(A100_UUID)['mig_profiles'] = 'a100-96gb'
    fake_nvml.write()
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlInit()


# -- GPU and compute instances ----------------------------------------------

def test_3g_and_4g_become_two_mig_devices(a100, nvml):
    gpu = the_a100()
    enable_mig(gpu)

    big = create_gi(gpu, P4G)
    small = create_gi(gpu, P3G)
    assert mig_devices(gpu) == {}       # no compute instance, no device
    create_ci(big)
    create_ci(small)

    devices = sorted(mig_devices(gpu).values(), key=lambda m: m['gi'])
    assert [(m['name'], m['gi'], m['ci'], m['memory']) for m in devices] == [
        (A100_NAME + ' MIG 4g.40gb', 1, 0, 40192 * MIB),
        (A100_NAME + ' MIG 3g.40gb', 2, 0, 40192 * MIB)]
    for mig in devices:
        assert MIG_UUID.match(mig['uuid']), mig['uuid']
    assert devices[0]['uuid'] != devices[1]['uuid']

    info = pynvml.nvmlGpuInstanceGetInfo(small)
    assert address(info.device) == address(gpu)
    assert (info.id, info.profileId) == (2, 9)
    assert (info.placement.start, info.placement.size) == (4, 4)
    assert [address(g) for g in gpu_instances(gpu, P3G)] == [address(small)]
    assert address(pynvml.nvmlDeviceGetGpuInstanceById(gpu, 1)) == \
        address(big)
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetGpuInstanceById(gpu, 3)


def test_the_whole_gpu_is_instance_0(a100, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    create(gpu, P7G)
    [mig] = mig_devices(gpu).values()
    assert (mig['name'], mig['gi'], mig['memory']) == (
        A100_NAME + ' MIG 7g.80gb', 0, 80384 * MIB)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_gi(gpu, P1G)


def test_seven_1g_fill_the_gpu(a100, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    for _ in range(7):
        create(gpu, P1G)

    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_gi(gpu, P1G)             # its instance count
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_gi(gpu, P1G_20)          # the compute slices
    devices = mig_devices(gpu)
    assert sorted(devices) == list(range(7))
    assert sorted(m['gi'] for m in devices.values()) == list(range(1, 8))
    assert {m['name'] for m in devices.values()} == {
        A100_NAME + ' MIG 1g.10gb'}
    assert len(gpu_instances(gpu, P1G)) == 7


def test_4g_twice_is_refused(a100, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    create_gi(gpu, P4G)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_gi(gpu, P4G)


def test_memory_slices_run_out_before_compute_slices(a100, nvml):
    """3g + 3g use 6 of the 7 compute slices but all 8 memory slices."""
    gpu = the_a100()
    enable_mig(gpu)
    create_gi(gpu, P3G)
    create_gi(gpu, P3G)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_gi(gpu, P1G)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_gi(gpu, P3G)             # at most 2 of them anyway


def test_instances_need_mig_mode_on(a100, nvml):
    gpu = the_a100()
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceCreateGpuInstance(gpu, 19)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        gpu_instances(gpu, P1G)
    enable_mig(gpu)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceCreateGpuInstance(gpu, 42)     # no such profile id


def test_one_compute_instance_over_the_whole_gpu_instance(a100, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    gpu_instance = create_gi(gpu, P3G)

    info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gpu_instance, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, SHARED)
    assert (info.id, info.sliceCount, info.instanceCount,
            info.multiprocessorCount) == (2, 3, 1, 42)
    assert text(info.name) == 'MIG 3g.40gb'
    v1 = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gpu_instance, 2, SHARED, version=1)
    assert (v1.id, v1.sliceCount) == (2, 3)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gpu_instance, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
            SHARED)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlGpuInstanceCreateComputeInstance(gpu_instance, 0)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gpu_instance, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT, SHARED)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gpu_instance, 2, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)

    compute = pynvml.nvmlGpuInstanceCreateComputeInstance(gpu_instance, 2)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        pynvml.nvmlGpuInstanceCreateComputeInstance(gpu_instance, 2)
    found = (pynvml.c_nvmlComputeInstance_t * 1)()
    count = ctypes.c_uint()
    pynvml.nvmlGpuInstanceGetComputeInstances(gpu_instance, 2, found,
                                              ctypes.byref(count))
    assert count.value == 1 and address(found[0]) == address(compute)


def test_destroying_goes_compute_instance_first(a100, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    gpu_instance, compute = create(gpu, P4G)
    [mig_uuid] = [m['uuid'] for m in mig_devices(gpu).values()]

    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlGpuInstanceDestroy(gpu_instance)
    assert len(mig_devices(gpu)) == 1

    pynvml.nvmlComputeInstanceDestroy(compute)
    assert mig_devices(gpu) == {}
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlComputeInstanceDestroy(compute)      # gone
    pynvml.nvmlGpuInstanceDestroy(gpu_instance)
    assert gpu_instances(gpu, P4G) == []
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetInfo(gpu_instance)

    # The slices are free again; the same GI and CI ids, the same uuid.
    create(gpu, P4G)
    create(gpu, P3G)
    assert mig_uuid in [m['uuid'] for m in mig_devices(gpu).values()]


def test_mig_mode_stays_on_while_instances_exist(a100, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    gpu_instance = create_gi(gpu, P2G)

    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlDeviceSetMigMode(gpu, pynvml.NVML_DEVICE_MIG_DISABLE)
    assert pynvml.nvmlDeviceGetMigMode(gpu) == [1, 1]

    pynvml.nvmlGpuInstanceDestroy(gpu_instance)
    assert pynvml.nvmlDeviceSetMigMode(
        gpu, pynvml.NVML_DEVICE_MIG_DISABLE) == pynvml.NVML_SUCCESS
    assert pynvml.nvmlDeviceGetMigMode(gpu) == [0, 0]


# -- faults ------------------------------------------------------------------

def test_faults_reach_the_new_functions(a100, fake_nvml):
    a100['errors'] = {'nvmlDeviceCreateGpuInstance': 'IN_USE',
                      'nvmlGpuInstanceDestroy': 'NO_PERMISSION'}
    fake_nvml.write()
    pynvml.nvmlInit()
    try:
        gpu = the_a100()
        enable_mig(gpu)
        with pytest.raises(pynvml.NVMLError_InUse):
            create_gi(gpu, P1G)

        a100['errors'] = {'nvmlGpuInstanceDestroy': 'NO_PERMISSION'}
        fake_nvml.write()
        reload()
        gpu = the_a100()
        gpu_instance = create_gi(gpu, P1G)      # mig mode kept by the state
        with pytest.raises(pynvml.NVMLError_NoPermission):
            pynvml.nvmlGpuInstanceDestroy(gpu_instance)

        a100['lost'] = 1
        fake_nvml.write()
        reload()
        with pytest.raises(pynvml.NVMLError_GpuIsLost):
            pynvml.nvmlDeviceGetGpuInstanceById(the_a100(), 1)
    finally:
        pynvml.nvmlShutdown()


# -- state that outlives the process -----------------------------------------

FRESH_PROCESS_SCRIPT = textwrap.dedent('''
    import ctypes, json, sys
    lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    import pynvml

    pynvml.nvmlInit()
    gpu = pynvml.nvmlDeviceGetHandleByIndex(int(sys.argv[2]))
    migs = {}
    for slot in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(gpu)):
        try:
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, slot)
        except pynvml.NVMLError_NotFound:
            continue
        migs[slot] = {
            'name': pynvml.nvmlDeviceGetName(mig),
            'uuid': pynvml.nvmlDeviceGetUUID(mig),
            'gi': pynvml.nvmlDeviceGetGpuInstanceId(mig),
            'ci': pynvml.nvmlDeviceGetComputeInstanceId(mig),
            'memory': pynvml.nvmlDeviceGetMemoryInfo(mig).total}
    if sys.argv[3] == 'destroy':
        gi = pynvml.nvmlDeviceGetGpuInstanceById(gpu, 1)
        ci = (pynvml.c_nvmlComputeInstance_t * 1)()
        count = ctypes.c_uint()
        pynvml.nvmlGpuInstanceGetComputeInstances(gi, 3, ci,
                                                  ctypes.byref(count))
        pynvml.nvmlComputeInstanceDestroy(ci[0])
        pynvml.nvmlGpuInstanceDestroy(gi)
    json.dump({'mode': pynvml.nvmlDeviceGetMigMode(gpu), 'migs': migs,
               'changes': lib.fake_nvml_mig_changes()}, sys.stdout)
    pynvml.nvmlShutdown()
''')


def in_a_fresh_process(fake_nvml, then='look'):
    result = subprocess.run(
        [sys.executable, '-c', FRESH_PROCESS_SCRIPT, fake_nvml.lib.path,
         str(A100_INDEX), then], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, FAKE_NVML_DATA=fake_nvml.data_path))
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    seen['migs'] = {int(slot): mig for slot, mig in seen['migs'].items()}
    return seen


def test_a_fresh_process_sees_the_mig_devices(a100, fake_nvml, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    create(gpu, P4G)
    create(gpu, P3G)
    here = mig_devices(gpu)

    seen = in_a_fresh_process(fake_nvml)

    assert seen == {'mode': [1, 1], 'migs': here, 'changes': 0}


def test_a_change_in_another_process_shows_at_the_next_init(
        a100, fake_nvml, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    create(gpu, P4G)                    # GI 1, destroyed over there
    create(gpu, P3G)

    seen = in_a_fresh_process(fake_nvml, then='destroy')
    assert seen['changes'] == 2         # its CI, then its GI

    assert len(mig_devices(gpu)) == 2   # this client has not looked again
    reload()
    gpu = the_a100()
    assert [(m['gi'], m['name']) for m in mig_devices(gpu).values()] == [
        (2, A100_NAME + ' MIG 3g.40gb')]
    create(gpu, P4G)                    # its slices are free here too


def test_the_state_file(a100, fake_nvml, nvml):
    gpu = the_a100()
    enable_mig(gpu)
    create(gpu, P4G)
    create_gi(gpu, P2G)
    [mig] = mig_devices(gpu).values()

    with open(fake_nvml.state_path) as f:
        lines = [line.split() for line in f if not line.startswith('#')]

    assert lines == [
        ['gpu', A100_UUID, '1', '1'],
        ['gi', A100_UUID, '1', str(P4G), '0'],
        ['ci', A100_UUID, '1', '0', '0', mig['uuid']],
        ['gi', A100_UUID, '2', str(P2G), '4']]
    # The H100 was not changed: the data file alone still speaks for it.
    assert H100_UUID not in open(fake_nvml.state_path).read()


def test_the_state_file_can_be_elsewhere(a100, fake_nvml, monkeypatch,
                                         tmp_path):
    elsewhere = str(tmp_path / 'mig-state')
    monkeypatch.setenv('FAKE_NVML_STATE', elsewhere)
    pynvml.nvmlInit()
    try:
        enable_mig(the_a100())
    finally:
        pynvml.nvmlShutdown()
    assert os.path.exists(elsewhere)
    assert not os.path.exists(fake_nvml.state_path)


def test_the_state_replaces_the_data_files_mig_devices(fake_nvml):
    """A GPU with profiles takes its [mig] sections as instances; once it
    is changed, the state file speaks for it, whatever the data says."""
    h100 = fake_nvml.gpu(H100_UUID)
    h100['mig_profiles'] = 'h100-80gb'
    fake_nvml.write()
    pynvml.nvmlInit()
    try:
        gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
        [small] = gpu_instances(gpu, P1G)
        assert pynvml.nvmlGpuInstanceGetInfo(small).id == 9
        with pytest.raises(pynvml.NVMLError_InUse):
            pynvml.nvmlGpuInstanceDestroy(small)
        found = (pynvml.c_nvmlComputeInstance_t * 1)()
        count = ctypes.c_uint()
        pynvml.nvmlGpuInstanceGetComputeInstances(small, 0, found,
                                                  ctypes.byref(count))
        pynvml.nvmlComputeInstanceDestroy(found[0])
        assert [m['gi'] for m in mig_devices(gpu).values()] == [2]

        h100['migs'][1]['name'] = 'NVIDIA H100 80GB HBM3 MIG 2g.20gb'
        fake_nvml.write()               # the state wins for this GPU
        reload()
        gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
        assert [m['name'] for m in mig_devices(gpu).values()] == [
            'NVIDIA H100 80GB HBM3 MIG 3g.40gb']
        assert len(gpu_instances(gpu, P1G)) == 1     # GI 9, no CI
    finally:
        pynvml.nvmlShutdown()


def test_a_mig_device_not_named_after_a_profile_fails_init(fake_nvml):
    h100 = fake_nvml.gpu(H100_UUID)
    h100['mig_profiles'] = 'h100-80gb'
    h100['migs'][0]['name'] = 'NVIDIA H100 80GB HBM3 MIG 5g.50gb'
    fake_nvml.write()
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlInit()


def test_a_state_file_it_cannot_read_fails_init(a100, fake_nvml):
    with open(fake_nvml.state_path, 'w') as f:
        f.write('gpu %s 1 1\ngi %s 1 42 0\n' % (A100_UUID, A100_UUID))
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlInit()


# -- the fake itself ---------------------------------------------------------

@pytest.mark.parametrize('struct, c_name', [
    (pynvml.c_nvmlGpuInstancePlacement_t, 'nvmlGpuInstancePlacement_t'),
    (pynvml.c_nvmlGpuInstanceProfileInfo_t, 'nvmlGpuInstanceProfileInfo_t'),
    (pynvml.c_nvmlGpuInstanceProfileInfo_v2_t,
     'nvmlGpuInstanceProfileInfo_v2_t'),
    (pynvml.c_nvmlGpuInstanceInfo_t, 'nvmlGpuInstanceInfo_t'),
    (pynvml.c_nvmlComputeInstanceProfileInfo_t,
     'nvmlComputeInstanceProfileInfo_t'),
    (pynvml.c_nvmlComputeInstanceProfileInfo_v2_t,
     'nvmlComputeInstanceProfileInfo_v2_t'),
])
def test_fake_mig_structs_match_pynvml(fake_nvml_lib, struct, c_name):
    assert layout_mismatches(fake_nvml_lib, struct, c_name) == []


def test_struct_versions_are_pynvmls():
    assert pynvml.nvmlGpuInstanceProfileInfo_v2 == (
        ctypes.sizeof(pynvml.c_nvmlGpuInstanceProfileInfo_v2_t) | 2 << 24)
    assert pynvml.nvmlComputeInstanceProfileInfo_v2 == (
        ctypes.sizeof(pynvml.c_nvmlComputeInstanceProfileInfo_v2_t) | 2 << 24)


MANAGEMENT = {
    'nvmlDeviceSetMigMode', 'nvmlDeviceGetGpuInstanceProfileInfo',
    'nvmlDeviceCreateGpuInstance', 'nvmlDeviceGetGpuInstances',
    'nvmlDeviceGetGpuInstanceById', 'nvmlGpuInstanceGetInfo',
    'nvmlGpuInstanceDestroy', 'nvmlGpuInstanceGetComputeInstanceProfileInfo',
    'nvmlGpuInstanceCreateComputeInstance',
    'nvmlGpuInstanceGetComputeInstances', 'nvmlComputeInstanceDestroy'}
VERSIONED = {'nvmlDeviceGetGpuInstanceProfileInfoV',
             'nvmlGpuInstanceGetComputeInstanceProfileInfoV'}


def test_an_older_driver_has_mig_management_but_not_the_v_calls(
        fake_nvml_lib, tmp_path):
    from tests.hardware.nvml import fixtures
    old = exported_symbols(
        fixtures.build_fake_nvml(tmp_path, ['FAKE_NVML_OLD_DRIVER']))
    new = exported_symbols(fake_nvml_lib.path)
    assert MANAGEMENT | VERSIONED <= new
    assert MANAGEMENT <= old
    assert not VERSIONED & old
