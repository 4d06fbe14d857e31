"""The fake driver's vGPUs are the nvidia_gpu driver's: the same GPU
described to both (the real driver through the fake NVML and sysfs, the
fake one through its inventory file) gives the same vGPU deployable.

The real-Nova suite boots servers on the fake driver's vGPUs
(tests/integration/test_real_nova.py); this is what makes that boot say
something about the real driver's MDEV handles.
"""

import pytest
import yaml

from cyborg_like.conf import fake_driver as fake_driver_conf
from cyborg_like.drivers import fake
from tests.hardware.nvml.devices import A100_ADDRESS
from tests.hardware.nvml.devices import A100_UUID
from tests.hardware.test_nvidia_gpu import by_address
from tests.hardware.test_nvidia_gpu import enable_vgpu_types

pytest_plugins = ('tests.hardware.nvml.fixtures',)

TYPE_ID, TYPE_NAME, INSTANCES = 'nvidia-471', 'GRID A100-4C', 10


@pytest.fixture
def fake_driver(nvidia_conf, tmp_path):
    """The fake driver reporting the A100 with the vGPU type the real one
    sees enabled: same NVML uuid, address, type and count."""
    path = tmp_path / 'inventory.yaml'
    path.write_text(yaml.safe_dump({'devices': [{
        'type': 'GPU', 'vendor': '0x10de', 'model': 'NVIDIA A100',
        'pci_address': A100_ADDRESS, 'uuid': A100_UUID,
        'deployables': [{'name': 'gpu0', 'attributes': {'rc': 'PGPU'},
                         'pci_functions': [A100_ADDRESS]}],
        'vgpu': {'type': TYPE_ID, 'name': TYPE_NAME,
                 'instances': INSTANCES}}]}))
    fake_driver_conf.register_opts(nvidia_conf)
    nvidia_conf.set_override('inventory_file', str(path), 'fake_driver')
    return fake.FakeDriver(nvidia_conf)


def test_fake_vgpus_are_the_real_drivers(nvidia_driver, nvidia_sysfs,
                                         nvidia_conf, fake_driver):
    nvidia_sysfs.add_vgpu_type(A100_ADDRESS, TYPE_ID, TYPE_NAME, INSTANCES)
    enable_vgpu_types(nvidia_conf, {TYPE_ID: [A100_ADDRESS]})
    real = by_address(nvidia_driver.discover())[A100_ADDRESS]
    [fake_gpu] = fake_driver.discover()

    [real_vgpu] = [d for d in real.deployables if d.attributes['rc'] == 'VGPU']
    [fake_vgpu] = [d for d in fake_gpu.deployables
                   if d.attributes['rc'] == 'VGPU']
    assert fake_vgpu.attach_handles == real_vgpu.attach_handles
    assert len(fake_vgpu.attach_handles) == INSTANCES
    assert fake_vgpu.attributes == real_vgpu.attributes
    assert fake_vgpu.num_accelerators == real_vgpu.num_accelerators
    # Partitioned: the whole GPU offers nothing beside its vGPUs.
    assert [d.num_accelerators for d in fake_gpu.deployables
            if d is not fake_vgpu] == [0]
    assert fake_vgpu.name == 'gpu0-vgpu-' + TYPE_ID
    assert real_vgpu.name == '%s-vgpu-%s' % (A100_UUID, TYPE_ID)
