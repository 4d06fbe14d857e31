"""A driver that reports devices from a YAML file, for demos and tests.

Without ``[fake_driver] inventory_file`` it reports one Intel FPGA with two
programmable regions and one NVIDIA GPU, so the all-in-one shows real data
at once. The file format is etc/cyborg_like/fake-inventory.yaml.sample.
"""

import json
import os
import time

import yaml

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base
from cyborg_like.drivers import pci

DEFAULT_INVENTORY = {
    'devices': [
        {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC Arria 10 GX',
         'pci_address': '0000:5e:00.0',
         'std_board_info': {'device_id': '0x09c4', 'class': 'Fuzzy FPGA'},
         'vendor_board_info': {'shell': 'fake-pr-interface-0'},
         'deployables': [
             {'name': 'region0', 'bitstream_id': None,
              'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                             'trait1': 'CUSTOM_FPGA_REGION_0'},
              'pci_functions': ['0000:5e:00.1']},
             {'name': 'region1', 'bitstream_id': None,
              'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                             'trait1': 'CUSTOM_FPGA_REGION_1'},
              'pci_functions': ['0000:5e:00.2']}]},
        {'type': 'GPU', 'vendor': '0x10de', 'model': 'Tesla T4',
         'pci_address': '0000:af:00.0',
         'std_board_info': {'device_id': '0x1eb8', 'class': '0x030200'},
         'deployables': [
             {'name': 'gpu0',
              'attributes': {'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
                             'trait1': 'CUSTOM_GPU_TESLA_T4'},
              'pci_functions': ['0000:af:00.0']}]},
    ]
}


INTERFACE_TRAIT = 'CUSTOM_FPGA_INTERFACE_'


def _interfaces(deployables):
    return {v[len(INTERFACE_TRAIT):] for d in deployables
            for v in map(str, d.attributes.values())
            if v.startswith(INTERFACE_TRAIT)}


class FakeDriver(base.AcceleratorDriver, base.Programmable,
                 base.Flashable):
    """Programming is remembered in memory and shown by ``discover``; a
    bitstream whose content starts with ``FAIL`` fails like a vendor tool
    would, with the rest of its first line as the tool's message; one that
    starts with ``SLEEP <seconds>`` takes that long, as a large FPGA image
    does (fault tests kill processes while it runs).

    Firmware images follow the same two first-line conventions; a line
    holding a JSON object says what the device reports once flashed:
    ``{"version": "2.0", "interface_id": "<uuid>"}`` -- the version as
    ``firmware_version`` in its vendor board info, the interface as the
    ``CUSTOM_FPGA_INTERFACE_<hex>`` trait of each of its regions (replacing
    the ones it had), as a new FPGA shell would."""

    name = 'fake'

    def __init__(self, conf):
        super().__init__(conf)
        self._programmed = {}   # (control path, region) -> bitstream id
        self._flashed = {}      # control path -> what the firmware reports

    def discover(self):
        path = self.conf.fake_driver.inventory_file
        if path:
            with open(path) as f:
                document = yaml.safe_load(f) or {}
        else:
            document = DEFAULT_INVENTORY
        devices = [self._device(d) for d in self._with_drivers(
            document.get('devices', []))]
        for device in devices:
            self._apply_firmware(device)
            for deployable in device.deployables:
                key = self._key(device.controlpath_id, deployable.name)
                if key in self._programmed:
                    deployable.bitstream_id = self._programmed[key]
        return devices

    def program(self, controlpath_id, deployable_name, bitstream_path,
                bitstream_id):
        with open(bitstream_path, 'rb') as f:
            head = f.readline()
        if head.startswith(b'FAIL'):
            raise exception.DriverError(
                driver=self.name,
                reason=head[4:].decode(errors='replace').strip() or
                'programming failed')
        if head.startswith(b'SLEEP'):
            time.sleep(float(head.split()[1]))
        self._programmed[self._key(controlpath_id, deployable_name)] = \
            bitstream_id

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
                if line.startswith('FAIL'):
                    raise exception.DriverError(
                        driver=self.name,
                        reason=line[4:].strip() or 'flashing failed')
                if line.startswith('SLEEP'):
                    time.sleep(float(line.split()[1]))
                elif line.startswith('{'):
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
