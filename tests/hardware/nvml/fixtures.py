"""Fixtures for the nvidia_gpu driver: a fake NVML library and a fake sysfs.

A test module uses them with ``pytest_plugins = ('tests.hardware.nvml.
fixtures',)``: they are kept out of tests/hardware/conftest.py, which the
other drivers' hardware tests (umockdev) share, and all their names say
nvidia or nvml so that they clash with none of those.

The fake libnvidia-ml.so.1 (fake_nvml.c) is built once per session with gcc
and loaded with ctypes before pynvml's first nvmlInit: pynvml then opens
"libnvidia-ml.so.1" by soname and gets the loaded copy. A library never
unloads from a process, so tests change the devices through the data file,
which the fake reads again at every nvmlInit.
"""

import copy
import ctypes
import os
import shutil
import subprocess

from oslo_config import cfg
import pytest

from cyborg_like.conf import nvidia_gpu as nvidia_gpu_conf
from cyborg_like.drivers import nvidia_gpu
from tests.hardware.nvml import devices

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, 'fake_nvml.c')
SONAME = 'libnvidia-ml.so.1'


class FakeNvml:
    """The devices the fake library reports; change them, then write()."""

    def __init__(self, lib, data_path):
        self.lib = lib
        self.data_path = data_path
        self.system = dict(devices.SYSTEM)
        self.gpus = copy.deepcopy(devices.GPUS)

    def gpu(self, uuid):
        return next(gpu for gpu in self.gpus if gpu['uuid'] == uuid)

    def write(self):
        with open(self.data_path, 'w') as f:
            f.write(devices.render(self.system, self.gpus))

    def init_count(self):
        """nvmlInit calls that no nvmlShutdown has matched yet."""
        return self.lib.fake_nvml_init_count()

    def event_polls(self):
        """How often a blocked event wait has looked and found nothing,
        this process's waits together: compare before and after."""
        return self.lib.fake_nvml_event_polls()

    @property
    def state_path(self):
        """Where the fake keeps MIG changes for later processes (the
        default: $FAKE_NVML_DATA + ".state"; the fixture unsets
        $FAKE_NVML_STATE)."""
        return self.data_path + '.state'

    @property
    def events_path(self):
        """Where a test appends the events the fake delivers (the
        default: $FAKE_NVML_DATA + ".events"; the fixture unsets
        $FAKE_NVML_EVENTS)."""
        return self.data_path + '.events'

    def inject(self, kind, uuid, *numbers):
        """An event from outside the process, as the driver of a real GPU
        raises one: ``inject('xid', uuid, 79)``, ``inject('dbe', uuid)``
        (format: top of fake_nvml.c). Event sets created before it get
        it, once each."""
        line = ' '.join([kind, uuid] + ['%d' % n for n in numbers])
        with open(self.events_path, 'a') as f:
            f.write(line + '\n')

    def mig_changes(self):
        """MIG changes (mode, GPU/compute instances) made so far by this
        process, all tests together: compare before and after."""
        return self.lib.fake_nvml_mig_changes()


class FakeSysfs:
    """A sysfs tree with just what the driver reads, in a temp dir."""

    def __init__(self, root):
        self.root = str(root)

    def pci(self, address, *parts):
        return os.path.join(self.root, 'bus', 'pci', 'devices', address,
                            *parts)

    def add_pci(self, address, numa_node=None):
        os.makedirs(self.pci(address), exist_ok=True)
        if numa_node is not None:
            self._write(self.pci(address, 'numa_node'), '%d\n' % numa_node)

    def add_vgpu_type(self, address, type_id, name, available,
                      device_api='vfio-pci', max_instance=None):
        """``max_instance``: the type's description says it, as NVIDIA's
        driver writes it (the most of the type one GPU makes)."""
        type_dir = self.pci(address, 'mdev_supported_types', type_id)
        os.makedirs(os.path.join(type_dir, 'devices'))
        self._write(os.path.join(type_dir, 'name'), name + '\n')
        if max_instance is not None:
            self._write(os.path.join(type_dir, 'description'),
                        'num_heads=1, frl_config=60, framebuffer=4096M, '
                        'max_resolution=4096x2160, max_instance=%d\n'
                        % max_instance)
        self._write(os.path.join(type_dir, 'device_api'), device_api + '\n')
        self._write(os.path.join(type_dir, 'available_instances'),
                    '%d\n' % available)
        self._write(os.path.join(type_dir, 'create'), '')

    def add_vf(self, pf, vf, number):
        """An SR-IOV virtual function: ``pf/virtfn<number>`` -> ``vf``."""
        self.add_pci(vf)
        os.symlink(os.path.join('..', vf),
                   self.pci(pf, 'virtfn%d' % number))

    def add_vendor_vgpu(self, vf, types, current=0):
        """NVIDIA's vendor-specific vGPU interface on a VF: ``types`` is
        ``{numeric id: name}`` as creatable_vgpu_types lists them."""
        os.makedirs(self.pci(vf, 'nvidia'))
        self._write(self.pci(vf, 'nvidia', 'creatable_vgpu_types'),
                    'ID    : vGPU Name\n' + ''.join(
                        '%-5d : %s\n' % item for item in types.items()))
        self._write(self.pci(vf, 'nvidia', 'current_vgpu_type'),
                    '%d\n' % current)

    def add_mdev(self, address, type_id, mdev_uuid):
        """What the kernel does when a uuid is written to ``create``."""
        mdev_dir = self.mdev(mdev_uuid)
        os.makedirs(mdev_dir)
        self._write(os.path.join(mdev_dir, 'remove'), '')
        type_dir = self.pci(address, 'mdev_supported_types', type_id)
        os.symlink(mdev_dir, os.path.join(type_dir, 'devices', mdev_uuid))
        available = os.path.join(type_dir, 'available_instances')
        with open(available) as f:
            left = int(f.read())
        self._write(available, '%d\n' % (left - 1))

    def drop_mdev(self, address, type_id, mdev_uuid):
        """What the kernel does when 1 is written to the mdev's ``remove``.
        """
        type_dir = self.pci(address, 'mdev_supported_types', type_id)
        os.unlink(os.path.join(type_dir, 'devices', mdev_uuid))
        shutil.rmtree(self.mdev(mdev_uuid))
        available = os.path.join(type_dir, 'available_instances')
        with open(available) as f:
            left = int(f.read())
        self._write(available, '%d\n' % (left + 1))

    def mdev(self, mdev_uuid, *parts):
        return os.path.join(self.root, 'bus', 'mdev', 'devices', mdev_uuid,
                            *parts)

    def read(self, path):
        with open(path) as f:
            return f.read()

    @staticmethod
    def _write(path, text):
        with open(path, 'w') as f:
            f.write(text)


def build_fake_nvml(directory, defines=()):
    """Compile fake_nvml.c (with ``-D`` each of ``defines``, e.g.
    FAKE_NVML_OLD_DRIVER); fail (never skip) without a C compiler."""
    gcc = shutil.which('gcc')
    if gcc is None:
        pytest.fail('gcc is required to build the fake libnvidia-ml.so.1 '
                    'for the nvidia_gpu tests: install gcc (apt-get install '
                    'gcc)', pytrace=False)
    path = os.path.join(str(directory), SONAME)
    result = subprocess.run(
        [gcc, '-Wall', '-Wextra', '-Werror', '-O2', '-shared', '-fPIC',
         '-Wl,-soname,' + SONAME, '-o', path, SOURCE]
        + ['-D' + name for name in defines],
        capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail('building the fake NVML failed:\n' + result.stderr,
                    pytrace=False)
    return path


@pytest.fixture(scope='session')
def fake_nvml_lib(tmp_path_factory):
    """The built fake, loaded into this process before any nvmlInit."""
    path = build_fake_nvml(tmp_path_factory.mktemp('fake-nvml'))
    lib = ctypes.CDLL(path)
    lib.fake_nvml_layout.restype = ctypes.c_long
    lib.fake_nvml_layout.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    # pynvml loads by soname: make sure it will find this copy.
    assert ctypes.CDLL(SONAME)._handle == lib._handle
    lib.path = path
    return lib


@pytest.fixture
def fake_nvml(fake_nvml_lib, tmp_path, monkeypatch):
    """An H100 (MIG on, 2 instances) and an A100: devices.GPUS."""
    fake = FakeNvml(fake_nvml_lib, str(tmp_path / 'nvml-devices.txt'))
    fake.write()
    monkeypatch.setenv('FAKE_NVML_DATA', fake.data_path)
    # MIG changes go next to this test's data file, nowhere else.
    monkeypatch.delenv('FAKE_NVML_STATE', raising=False)
    monkeypatch.delenv('FAKE_NVML_EVENTS', raising=False)
    yield fake
    leaked = fake.init_count()
    for _ in range(leaked):     # so that later tests read their data again
        fake_nvml_lib.nvmlShutdown()
    assert leaked == 0, '%d nvmlInit call(s) never shut down' % leaked


@pytest.fixture
def nvidia_sysfs(tmp_path):
    """The two GPUs' sysfs dirs, no vGPU types. NUMA node only for the A100,
    for which GPUS has none: each GPU's node has one possible source."""
    sysfs = FakeSysfs(tmp_path / 'sys')
    sysfs.add_pci(devices.H100_ADDRESS)
    sysfs.add_pci(devices.A100_ADDRESS, numa_node=0)
    return sysfs


@pytest.fixture
def nvidia_conf(nvidia_sysfs):
    conf = cfg.ConfigOpts()
    nvidia_gpu_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override('sysfs_root', nvidia_sysfs.root, group='nvidia_gpu')
    return conf


@pytest.fixture
def nvidia_driver(fake_nvml, nvidia_conf):
    return nvidia_gpu.NvidiaGPUDriver(nvidia_conf)
