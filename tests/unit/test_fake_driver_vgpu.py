"""The fake driver's ``vgpu`` entry: a GPU cut into vGPUs whose MDEV
handles are those the nvidia_gpu driver gives (the real driver's side of
the comparison is tests/hardware/test_fake_vgpu_shape.py)."""

import pytest
import yaml

from cyborg_like.common import inventory
from cyborg_like.conf import CONF
from cyborg_like.drivers import fake

GPU = {'type': 'GPU', 'vendor': '0x10de', 'model': 'Tesla T4',
       'pci_address': '0000:d8:00.0',
       'deployables': [{'name': 'gpu1',
                        'attributes': {'rc': 'PGPU',
                                       'trait0': 'CUSTOM_GPU_NVIDIA'},
                        'pci_functions': ['0000:d8:00.0']}],
       'vgpu': {'type': 'nvidia-222', 'name': 'GRID T4-2Q', 'instances': 3}}


@pytest.fixture
def discover(tmp_path):
    """Discovery by a new driver of ``devices`` written to its file."""
    def run(*devices):
        path = tmp_path / 'inventory.yaml'
        path.write_text(yaml.safe_dump({'devices': list(devices)}))
        CONF.set_override('inventory_file', str(path), 'fake_driver')
        try:
            return fake.FakeDriver(CONF).discover()
        finally:
            CONF.clear_override('inventory_file', 'fake_driver')
    return run


def _vgpu(device):
    [found] = [d for d in device.deployables
               if d.attributes.get('rc') == 'VGPU']
    return found


def test_a_vgpu_entry_cuts_the_gpu_into_mdevs(discover):
    [gpu] = discover(GPU)
    assert [(d.name, d.num_accelerators) for d in gpu.deployables] == [
        ('gpu1', 0), ('gpu1-vgpu-nvidia-222', 3)]
    vgpu = _vgpu(gpu)
    assert vgpu.attributes == {'rc': 'VGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
                               'trait1': 'CUSTOM_VGPU_GRID_T4_2Q'}
    assert {h.attach_type for h in vgpu.attach_handles} == {'MDEV'}
    infos = [h.attach_info for h in vgpu.attach_handles]
    assert [i['vgpu_mark'] for i in infos] == [
        'nvidia-222_0', 'nvidia-222_1', 'nvidia-222_2']
    assert {i['asked_type'] for i in infos} == {'nvidia-222'}
    assert {i['device_api'] for i in infos} == {'vfio-pci'}
    assert len({i['uuid'] for i in infos}) == 3
    inventory.validate('h', [gpu.to_dict()])


def test_mdev_uuids_stay_across_restarts_and_differ_between_gpus(discover):
    first = _vgpu(discover(GPU)[0]).attach_handles
    again = _vgpu(discover(GPU)[0]).attach_handles
    assert first == again       # a restarted agent: the same handles
    other = _vgpu(discover(dict(GPU, pci_address='0000:d9:00.0'))[0])
    assert not ({h.attach_info['uuid'] for h in first}
                & {h.attach_info['uuid'] for h in other.attach_handles})


def test_the_gpus_nvml_uuid_decides_the_mdev_uuids(discover):
    def mdevs(entry):
        return [h.attach_info['uuid']
                for h in _vgpu(discover(entry)[0]).attach_handles]
    named = dict(GPU, uuid='GPU-1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f')
    assert mdevs(dict(named, pci_address='0000:01:00.0')) == mdevs(named)
    assert mdevs(named) != mdevs(GPU)


def test_an_mdev_handle_names_its_parent_for_nova(discover):
    """Nova's libvirt driver makes the mdev on the device the handle's
    PCI fields name."""
    [handle, *_] = _vgpu(discover(GPU)[0]).attach_handles
    domain, bus, rest = GPU['pci_address'].split(':')
    device, function = rest.split('.')
    assert {k: handle.attach_info[k] for k in (
        'domain', 'bus', 'device', 'function')} == {
        'domain': domain, 'bus': bus, 'device': device,
        'function': function}


def test_a_gpu_without_vgpu_entry_is_whole(discover):
    plain = {k: v for k, v in GPU.items() if k != 'vgpu'}
    [gpu] = discover(plain)
    assert [(d.name, d.num_accelerators) for d in gpu.deployables] == [
        ('gpu1', 1)]
