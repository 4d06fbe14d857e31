"""The nvidia_gpu driver, running the real pynvml against a fake NVML.

The fake libnvidia-ml.so.1 and sysfs tree are in tests/hardware/nvml; our own
code is never patched. See /work/shared/TEST-HARDWARE.md, "NVML for pynvml".
"""

import ctypes
import dataclasses
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap

import pynvml
import pytest
import stevedore

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base
from tests.hardware.nvml.devices import A100_ADDRESS
from tests.hardware.nvml.devices import A100_UUID
from tests.hardware.nvml.devices import GIB
from tests.hardware.nvml.devices import H100_ADDRESS
from tests.hardware.nvml.devices import H100_UUID

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
        'mig_mode': 'enabled'}
    assert devices[A100_ADDRESS].vendor_board_info['mig_mode'] == 'disabled'


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
    assert small.attach_handles == [base.AttachHandle('MDEV', {
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

@pytest.fixture
def vgpu_types(nvidia_sysfs):
    nvidia_sysfs.add_vgpu_type(A100_ADDRESS, 'nvidia-471', 'GRID A100-4C', 10)
    nvidia_sysfs.add_vgpu_type(A100_ADDRESS, 'nvidia-472', 'GRID A100-8C', 5)
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
    assert a100['%s-vgpu-nvidia-472' % A100_UUID].num_accelerators == 5


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
        'remapped_rows_pending': False}
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
    for key in ('ecc_uncorrected_volatile', 'retired_pages_pending',
                'remapped_rows'):
        del a100[key]
    a100['errors'] = {'nvmlDeviceGetTemperatureV': 'NOT_SUPPORTED',
                      'nvmlDeviceGetPowerUsage': 'NOT_SUPPORTED'}
    fake_nvml.write()

    health = health_by_address(nvidia_driver.health())[A100_ADDRESS]
    assert health.healthy
    assert sorted(health.utilization) == [
        'gpu_percent', 'memory_percent', 'memory_total_bytes',
        'memory_used_bytes']


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

    # Back on the bus and answering: read afresh, nothing kept.
    third['lost'] = 0
    fake_nvml.write()
    assert by_address(nvidia_driver.discover()) == after


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


def exported_symbols(path):
    if shutil.which('nm') is None:
        pytest.fail('nm (binutils) is required to list the fake NVML\'s '
                    'symbols', pytrace=False)
    result = subprocess.run(['nm', '-D', '--defined-only', path],
                            capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in result.stdout.splitlines()}


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
    (pynvml.c_nvmlMemory_v2_t, 'nvmlMemory_v2_t'),
    (pynvml.c_nvmlUtilization_t, 'nvmlUtilization_t'),
    (pynvml.c_nvmlTemperature_v1_t, 'nvmlTemperature_v1_t'),
])
def test_fake_structs_match_pynvml(fake_nvml_lib, struct, c_name):
    def layout(field=None):
        return fake_nvml_lib.fake_nvml_layout(
            c_name.encode(), field.encode() if field else None)

    assert layout() == ctypes.sizeof(struct)
    for field, *_ in struct._fields_:
        assert layout(field) == getattr(struct, field).offset, field


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
