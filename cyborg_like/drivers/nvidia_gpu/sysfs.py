"""What the driver reads and writes in sysfs: NUMA nodes and vGPU mdevs.

The kernel's mediated-device (mdev) interface, for a GPU at ADDR:

    bus/pci/devices/ADDR/numa_node                       -1 if none
    bus/pci/devices/ADDR/mdev_supported_types/TYPE/      one per vGPU type
        name  available_instances  device_api  create  devices/
    bus/mdev/devices/UUID/remove

Writing a UUID to ``create`` makes a vGPU of TYPE, which then appears in
``bus/mdev/devices`` and ``TYPE/devices``; writing 1 to its ``remove``
destroys it.
"""

import dataclasses
import os
import uuid as uuidlib


@dataclasses.dataclass
class VgpuType:
    type_id: str                # e.g. nvidia-471
    name: str                   # e.g. "NVIDIA H100-4C"
    device_api: str             # e.g. vfio-pci
    available: int              # how many more the GPU can make now
    created: list               # uuids of the mdevs of this type


class Sysfs:
    def __init__(self, root):
        self.root = root

    def numa_node(self, address):
        """The device's NUMA node, or None if the host has no NUMA."""
        text = self._read(self._pci(address, 'numa_node'))
        if text is None or int(text) < 0:
            return None
        return int(text)

    def vgpu_types(self, address):
        types_dir = self._pci(address, 'mdev_supported_types')
        try:
            type_ids = sorted(os.listdir(types_dir))
        except FileNotFoundError:
            return []                   # no vGPU manager on this GPU
        return [self._vgpu_type(os.path.join(types_dir, type_id))
                for type_id in type_ids]

    def mdev_exists(self, mdev_uuid):
        return os.path.isdir(self._mdev(mdev_uuid))

    def create_mdev(self, address, type_id, mdev_uuid):
        """Ask the kernel for an mdev of ``type_id``; OSError on refusal."""
        path = self._pci(address, 'mdev_supported_types',
                         _plain_name(type_id), 'create')
        if not os.path.exists(path):
            raise FileNotFoundError('no vGPU type %s on %s' % (type_id,
                                                               address))
        self._write(path, str(uuidlib.UUID(mdev_uuid)))

    def remove_mdev(self, mdev_uuid):
        self._write(os.path.join(self._mdev(mdev_uuid), 'remove'), '1')

    def _vgpu_type(self, type_dir):
        devices = os.path.join(type_dir, 'devices')
        created = sorted(os.listdir(devices)) if os.path.isdir(devices) else []
        return VgpuType(
            type_id=os.path.basename(type_dir),
            name=self._read(os.path.join(type_dir, 'name')) or '',
            device_api=self._read(os.path.join(type_dir, 'device_api')) or '',
            available=int(self._read(
                os.path.join(type_dir, 'available_instances')) or 0),
            created=created)

    def _pci(self, address, *parts):
        return os.path.join(self.root, 'bus', 'pci', 'devices',
                            _plain_name(address), *parts)

    def _mdev(self, mdev_uuid):
        # uuid.UUID() refuses anything that could climb out of the tree.
        return os.path.join(self.root, 'bus', 'mdev', 'devices',
                            str(uuidlib.UUID(mdev_uuid)))

    @staticmethod
    def _read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except FileNotFoundError:
            return None

    @staticmethod
    def _write(path, text):
        # One write() call: sysfs attributes act on each write.
        with open(path, 'w') as f:
            f.write(text)


def _plain_name(name):
    """Refuse names from the wire that could point outside their dir."""
    if not name or '/' in name or name in ('.', '..'):
        raise ValueError('invalid sysfs name %r' % name)
    return name
