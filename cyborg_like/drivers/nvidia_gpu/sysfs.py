"""What the driver reads and writes in sysfs: NUMA nodes and vGPU mdevs.

The kernel's mediated-device (mdev) interface, for a GPU at ADDR:

    bus/pci/devices/ADDR/numa_node                       -1 if none
    bus/pci/devices/ADDR/mdev_supported_types/TYPE/      one per vGPU type
        name  available_instances  device_api  create  devices/
    bus/mdev/devices/UUID/remove

Writing a UUID to ``create`` makes a vGPU of TYPE, which then appears in
``bus/mdev/devices`` and ``TYPE/devices``; writing 1 to its ``remove``
destroys it.

From Ampere on, with SR-IOV enabled (``sriov-manage -e``), the vGPU types
are on the GPU's virtual functions (``ADDR/virtfnN`` -> the VF), one vGPU
per VF: either in the same mdev layout under each VF, or, with recent
drivers and kernels, in NVIDIA's vendor-specific VFIO interface:

    bus/pci/devices/VF/nvidia/creatable_vgpu_types    "ID : name" lines
    bus/pci/devices/VF/nvidia/current_vgpu_type       0, or the ID in use

where writing an ID to ``current_vgpu_type`` makes the VF that vGPU (then
passed through whole) and writing 0 gives it back.
"""

import dataclasses
import os
import re
import uuid as uuidlib

_VIRTFN = re.compile(r'^virtfn(\d+)\Z')
_MAX_INSTANCE = re.compile(r'\bmax_instance=(\d+)')


@dataclasses.dataclass
class VgpuType:
    type_id: str                # e.g. nvidia-471
    name: str                   # e.g. "NVIDIA H100-4C"
    device_api: str             # e.g. vfio-pci
    available: int              # how many more the GPU can make now
    created: list               # uuids of the mdevs of this type
    # The most of this type one GPU makes, from the description NVIDIA's
    # driver writes ("..., max_instance=20"); None where it says nothing.
    # On SR-IOV VFs each VF lists one available whatever this says.
    max_instances: int | None = None


@dataclasses.dataclass
class VfVgpu:
    """A VF's vGPU in NVIDIA's vendor-specific interface."""
    address: str
    creatable: dict             # type id (e.g. nvidia-1157) -> name
    current: str | None         # the type id it is now, None if none


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

    def virtual_functions(self, address):
        """The GPU's SR-IOV VFs (PCI addresses), in VF order."""
        pf = self._pci(address)
        try:
            names = os.listdir(pf)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            match = _VIRTFN.match(name)
            if match:
                target = os.readlink(os.path.join(pf, name))
                found.append((int(match.group(1)), os.path.basename(target)))
        return [vf for _, vf in sorted(found)]

    def vf_vgpu(self, vf):
        """The VF's VfVgpu, or None without the vendor-specific interface.
        Type ids are given as in the mdev layout: nvidia-<ID>."""
        creatable = self._read(self._pci(vf, 'nvidia', 'creatable_vgpu_types'))
        if creatable is None:
            return None
        types = {}
        for line in creatable.splitlines():
            number, colon, name = line.partition(':')
            if colon and number.strip().isdigit():
                types['nvidia-' + number.strip()] = name.strip()
        current = self._read(self._pci(vf, 'nvidia', 'current_vgpu_type'))
        return VfVgpu(vf, types, None if current in (None, '', '0')
                      else 'nvidia-' + current)

    def set_vf_vgpu_type(self, vf, type_id):
        """Make the VF a vGPU of ``type_id`` (nvidia-<ID>), or none (None).
        """
        number = '0' if type_id is None else type_id.removeprefix('nvidia-')
        if not number.isdigit():
            raise ValueError('invalid vGPU type %r' % type_id)
        self._write(self._pci(vf, 'nvidia', 'current_vgpu_type'), number)

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
            created=created,
            max_instances=_max_instances(self._read(
                os.path.join(type_dir, 'description'))))

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


def _max_instances(description):
    match = _MAX_INSTANCE.search(description or '')
    return int(match.group(1)) if match else None
