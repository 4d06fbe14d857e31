"""A driver that reports devices from a YAML file, for demos and tests.

Without ``[fake_driver] inventory_file`` it reports one Intel FPGA with two
programmable regions and one NVIDIA GPU, so the all-in-one shows real data
at once. The file format is etc/cyborg_like/fake-inventory.yaml.sample.
"""

import json
import os
import re
import time
import uuid


import yaml

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base
from cyborg_like.drivers import fake_readings
from cyborg_like.drivers.nvidia_gpu import vgpu
from cyborg_like.drivers import pci

# The trait Cyborg's fake driver reports: profiles written for it (the
# scenario tests of cyborg-tempest-plugin) find the default devices.
FAKE_DEVICE_TRAIT = 'CUSTOM_FAKE_DEVICE'

DEFAULT_INVENTORY = {
    'devices': [
        {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC Arria 10 GX',
         'pci_address': '0000:5e:00.0',
         'std_board_info': {'device_id': '0x09c4', 'class': 'Fuzzy FPGA'},
         'vendor_board_info': {'shell': 'fake-pr-interface-0'},
         'deployables': [
             {'name': 'region0', 'bitstream_id': None,
              'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                             'trait1': 'CUSTOM_FPGA_REGION_0',
                             'trait2': FAKE_DEVICE_TRAIT},
              'pci_functions': ['0000:5e:00.1']},
             {'name': 'region1', 'bitstream_id': None,
              'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                             'trait1': 'CUSTOM_FPGA_REGION_1',
                             'trait2': FAKE_DEVICE_TRAIT},
              'pci_functions': ['0000:5e:00.2']}],
         # What the Intel FPGA driver reads from the board's sensors.
         'readings': {'temperature_c': 52, 'board_power_w': 38.0}},
        {'type': 'GPU', 'vendor': '0x10de', 'model': 'Tesla T4',
         'pci_address': '0000:af:00.0',
         'std_board_info': {'device_id': '0x1eb8', 'class': '0x030200'},
         'deployables': [
             {'name': 'gpu0',
              'attributes': {'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
                             'trait1': 'CUSTOM_GPU_TESLA_T4',
                             'trait2': FAKE_DEVICE_TRAIT},
              'pci_functions': ['0000:af:00.0']}],
         # A T4 at work (fake_readings.py): 15 GiB, 70 W at most.
         'readings': {'gpu_percent': 35, 'memory_percent': 20,
                      'memory_used_bytes': 4294967296,
                      'memory_total_bytes': 16106127360,
                      'temperature_c': 48, 'power_w': 32.5}},
    ]
}


INTERFACE_TRAIT = 'CUSTOM_FPGA_INTERFACE_'


def _interfaces(deployables):
    return {v[len(INTERFACE_TRAIT):] for d in deployables
            for v in map(str, d.attributes.values())
            if v.startswith(INTERFACE_TRAIT)}


class FakeDriver(base.AcceleratorDriver, base.Programmable,
                 base.Flashable, base.MigPartitioning, base.HealthReporting):
    """Programming is remembered in memory and shown by ``discover``; a
    bitstream whose content starts with ``FAIL`` fails like a vendor tool
    would, with the rest of its first line as the tool's message; one that
    starts with ``SLEEP <seconds>`` takes that long, as a large FPGA image
    does (fault tests kill processes while it runs); ``SLEEP`` then
    ``FAIL`` on the next line fails after the delay.

    Firmware images follow the same two first-line conventions; a line
    holding a JSON object says what the device reports once flashed:
    ``{"version": "2.0", "interface_id": "<uuid>"}`` -- the version as
    ``firmware_version`` in its vendor board info, the interface as the
    ``CUSTOM_FPGA_INTERFACE_<hex>`` trait of each of its regions (replacing
    the ones it had), as a new FPGA shell would.

    A GPU entry with ``mig_profiles`` (``{name: {slices, instances}}``, of
    a GPU with 7 compute slices) takes MIG layouts: its vendor board info
    shows ``mig_mode`` and ``mig_layout``; once a layout is applied the
    whole GPU offers 0 and each MIG device is a ``<gpu>-mig-<n>``
    deployable (rc ``CUSTOM_MIG_<PROFILE>``) with a MIG handle carrying
    its ``mig_uuid``, as the nvidia_gpu driver reports them.
    ``mig_apply_seconds`` makes applying take that long.

    A GPU entry with ``vgpu`` (``{type, name, instances}``: an mdev type
    id such as ``nvidia-222``, its name, how many vGPUs of it the GPU
    makes; ``device_api``, vfio-pci by default) offers vGPUs as the
    nvidia_gpu driver does once the operator enabled that type: the GPU's
    other deployables offer 0 (the silicon is cut into vGPUs) and a
    ``<gpu>-vgpu-<type>`` deployable (rc ``VGPU``, traits
    ``CUSTOM_GPU_NVIDIA`` and ``CUSTOM_VGPU_<NAME>``) has one MDEV handle
    per instance, its info and mdev uuid those the driver gives, from the
    entry's ``uuid`` (the GPU's NVML uuid; else one fixed by its
    address). The mdevs count as made: preparing a handle makes nothing."""

    name = 'fake'
    # Where readings take their time from (fake_readings.py); tests set
    # it on an instance to read any moment.
    clock = staticmethod(time.time)

    def __init__(self, conf):
        super().__init__(conf)
        self._programmed = {}   # (control path, region) -> bitstream id
        self._flashed = {}      # control path -> what the firmware reports
        self._layouts = {}      # control path -> MIG profile names

    def discover(self):
        entries = list(self._with_drivers(self._entries()))
        devices = [self._device(d) for d in entries]
        for device, entry in zip(devices, entries):
            self._apply_firmware(device)
            self._apply_layout(device, entry)
            _apply_vgpu(device, entry, self.name)
            for deployable in device.deployables:
                key = self._key(device.controlpath_id, deployable.name)
                if key in self._programmed:
                    deployable.bitstream_id = self._programmed[key]
        return devices

    def health(self):
        """The readings of the devices whose entry has a ``health``
        mapping (``healthy``, ``reasons``, ``utilization``) or
        ``readings`` (values that change over time, fake_readings.py);
        the others send none and stay of unknown health."""
        now = self.clock()
        return [self._health_of(entry, now) for entry in self._entries()
                if isinstance(entry.get('health'), dict)
                or isinstance(entry.get('readings'), dict)]

    @staticmethod
    def _health_of(entry, now):
        """One device's reading at ``now``: its ``readings`` on top of its
        fixed ``health``, whose verdict they replace when they give one."""
        fixed = entry.get('health')
        fixed = fixed if isinstance(fixed, dict) else {}
        healthy = bool(fixed.get('healthy', True))
        reasons = list(fixed.get('reasons') or [])
        utilization = dict(fixed.get('utilization') or {})
        if isinstance(entry.get('readings'), dict):
            reading = fake_readings.at(entry['readings'], now)
            utilization.update(reading.utilization)
            if reading.healthy is not None:
                healthy, reasons = reading.healthy, reading.reasons
        return base.DeviceHealth(pci.controlpath_id(entry['pci_address']),
                                 healthy=healthy, reasons=reasons,
                                 utilization=utilization)

    def _entries(self):
        path = self.conf.fake_driver.inventory_file
        if path:
            with open(path) as f:
                document = yaml.safe_load(f) or {}
        else:
            document = DEFAULT_INVENTORY
        return document.get('devices', [])

    def program(self, controlpath_id, deployable_name, bitstream_path,
                bitstream_id):
        # The staging lines lead; the rest is the image's data.
        with open(bitstream_path, 'rb') as f:
            for line in iter(f.readline, b''):
                if not self._staged(line.decode(errors='replace'),
                                    'programming failed'):
                    break
        self._programmed[self._key(controlpath_id, deployable_name)] = \
            bitstream_id

    def _staged(self, line, failure):
        """Act on one staging line of an image: ``SLEEP <seconds>`` waits,
        ``FAIL [message]`` fails as the vendor tool would. In order, so
        that ``SLEEP`` then ``FAIL`` is a failure after a delay (a bind
        that fails once Nova waits for it). False for any other line."""
        if line.startswith('FAIL'):
            raise exception.DriverError(
                driver=self.name, reason=line[4:].strip() or failure)
        if line.startswith('SLEEP'):
            time.sleep(float(line.split()[1]))
            return True
        return False

    def _with_drivers(self, entries):
        """The entries whose driver family is installed, each deployable
        carrying the installed version (``driver_state_dir``)."""
        state_dir = self.conf.fake_driver.driver_state_dir
        for entry in entries:
            family = entry.get('driver_family')
            if not state_dir or not family:
                yield entry
                continue
            try:
                with open(os.path.join(state_dir, family + '.version')) as f:
                    version = f.read().strip()
            except FileNotFoundError:
                continue        # its driver is not installed: not seen
            yield dict(entry, deployables=[
                dict(d, attributes=dict(d.get('attributes') or {},
                                        driver_version=version))
                for d in entry.get('deployables', [])])
    def firmware_versions(self, controlpath_id):
        key = inventory.canonical(controlpath_id)
        for device in self.discover():
            if inventory.canonical(device.controlpath_id) == key:
                return {'firmware_version':
                        device.vendor_board_info.get('firmware_version'),
                        'interface_ids': sorted(
                            _interfaces(device.deployables))}
        raise exception.DriverError(driver=self.name,
                                    reason='no device at %s' % key)

    def flash_firmware(self, controlpath_id, image_path):
        self.firmware_versions(controlpath_id)      # the device exists
        described = {}
        with open(image_path, 'rb') as f:
            for line in f.read().decode(errors='replace').splitlines():
                if not self._staged(line, 'flashing failed') and \
                        line.startswith('{'):
                    described = json.loads(line)
        self._flashed[inventory.canonical(controlpath_id)] = described

    def _apply_firmware(self, device):
        described = self._flashed.get(
            inventory.canonical(device.controlpath_id))
        if not described:
            return
        if described.get('version'):
            device.vendor_board_info = dict(
                device.vendor_board_info,
                firmware_version=described['version'])
        if described.get('interface_id'):
            trait = INTERFACE_TRAIT + described['interface_id'].replace(
                '-', '').upper()
            for deployable in device.deployables:
                kept = {k: v for k, v in deployable.attributes.items()
                        if not str(v).startswith(INTERFACE_TRAIT)}
                kept['trait_interface'] = trait
                deployable.attributes = kept

    # -- MIG layouts ------------------------------------------------------

    def mig_layout(self, controlpath_id):
        self._mig_profiles(controlpath_id)          # a MIG-capable GPU
        return list(self._layouts.get(inventory.canonical(controlpath_id),
                                      []))

    def apply_mig_layout(self, controlpath_id, layout):
        entry = self._mig_profiles(controlpath_id)
        profiles = entry['mig_profiles']
        unknown = sorted(set(layout) - set(profiles))
        if unknown:
            raise exception.DriverError(
                driver=self.name, reason='the GPU offers no MIG profile %s '
                '(it offers %s)' % (', '.join(unknown),
                                    ', '.join(sorted(profiles))))
        slices = sum(profiles[name]['slices'] for name in layout)
        if slices > 7:
            raise exception.DriverError(
                driver=self.name, reason='the layout needs %d compute '
                'slices; the GPU has 7' % slices)
        for name in set(layout):
            if layout.count(name) > profiles[name]['instances']:
                raise exception.DriverError(
                    driver=self.name, reason='the GPU makes at most %d '
                    'instance(s) of %s' % (profiles[name]['instances'],
                                           name))
        time.sleep(float(entry.get('mig_apply_seconds', 0)))
        ordered = sorted(layout, key=lambda n: -profiles[n]['slices'])
        self._layouts[inventory.canonical(controlpath_id)] = ordered
        return list(ordered)

    def _mig_profiles(self, controlpath_id):
        key = inventory.canonical(controlpath_id)
        for entry in self._entries():
            if (inventory.canonical(pci.controlpath_id(entry['pci_address']))
                    == key and entry.get('mig_profiles')):
                return entry
        raise exception.DriverError(
            driver=self.name, reason='no MIG-capable GPU at %s' % key)

    def _apply_layout(self, device, entry):
        if not entry.get('mig_profiles'):
            return
        layout = self._layouts.get(inventory.canonical(device.controlpath_id))
        device.vendor_board_info = dict(
            device.vendor_board_info,
            mig_mode='enabled' if layout else 'disabled',
            mig_layout=list(layout or []))
        if not layout:
            return
        whole = device.deployables[0]
        whole.num_accelerators = 0
        address = pci.address_of(device.controlpath_id)
        for n, name in enumerate(layout):
            mig_uuid = 'MIG-%s' % uuid.uuid5(
                uuid.NAMESPACE_URL, 'fake-mig:%s:%d:%s' % (address, n, name))
            custom = name.upper().replace('.', '_').replace('+', '_')
            device.deployables.append(base.Deployable(
                name='%s-mig-%d' % (whole.name, n), driver_name=self.name,
                num_accelerators=1,
                attributes={'rc': 'CUSTOM_MIG_' + custom,
                            'trait0': 'CUSTOM_GPU_MIG_' + custom},
                attach_handles=[base.AttachHandle('MIG', {
                    'mig_uuid': mig_uuid, 'profile': name})]))

    @staticmethod
    def _key(controlpath_id, deployable_name):
        return inventory.canonical(controlpath_id), deployable_name

    def _device(self, entry):
        cpid = pci.controlpath_id(entry['pci_address'])
        return base.Device(
            type=entry['type'], vendor=entry['vendor'], model=entry['model'],
            controlpath_id=cpid,
            std_board_info=entry.get('std_board_info', {}),
            vendor_board_info=entry.get('vendor_board_info', {}),
            deployables=[self._deployable(d)
                         for d in entry.get('deployables', [])])

    def _deployable(self, entry):
        handles = [pci.attach_handle(a)
                   for a in entry.get('pci_functions', [])]
        return base.Deployable(
            name=entry['name'], driver_name=self.name,
            num_accelerators=entry.get('num_accelerators', len(handles)),
            attributes=entry.get('attributes', {}),
            attach_handles=handles,
            bitstream_id=entry.get('bitstream_id'))


# -- vGPUs --------------------------------------------------------------


def _apply_vgpu(device, entry, driver_name):
    """The vGPU deployable of an entry with ``vgpu``; the GPU's other
    deployables offer 0 beside it, as on the hardware (N vGPUs of one
    type or the whole GPU)."""
    offered = entry.get('vgpu')
    if not offered:
        return
    for deployable in device.deployables:
        deployable.num_accelerators = 0
    device.deployables.append(_vgpu_deployable(
        device.deployables[0].name if device.deployables else 'gpu',
        _gpu_uuid(entry), entry['pci_address'], offered, driver_name))


def _vgpu_deployable(gpu_name, gpu_uuid, address, offered, driver_name):
    type_id = offered['type']
    handles = [vgpu.mdev_handle(gpu_uuid, address, type_id, n,
                                offered.get('device_api', 'vfio-pci'))
               for n in range(int(offered['instances']))]
    return base.Deployable(
        name='%s-vgpu-%s' % (gpu_name, type_id), driver_name=driver_name,
        num_accelerators=len(handles),
        attributes={'rc': 'VGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
                    'trait1': 'CUSTOM_VGPU_' + _custom(
                        offered.get('name') or type_id)},
        attach_handles=handles)


def _gpu_uuid(entry):
    """The GPU's NVML uuid: the entry's, else one that its address fixes
    (the mdev uuids derive from it, so they stay across restarts)."""
    return entry.get('uuid') or 'GPU-%s' % uuid.uuid5(
        uuid.NAMESPACE_URL, 'fake-gpu:%s' % pci.full_address(
            entry['pci_address']))


def _custom(text):
    """A trait's name part as the nvidia_gpu driver writes it:
    ``'GRID T4-2Q'`` -> ``'GRID_T4_2Q'``."""
    return re.sub(r'[^A-Z0-9]+', '_', text.upper()).strip('_')
