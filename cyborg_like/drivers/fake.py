"""A driver that reports devices from a YAML file, for demos and tests.

Without ``[fake_driver] inventory_file`` it reports one Intel FPGA with two
programmable regions and one NVIDIA GPU, so the all-in-one shows real data
at once. The file format is etc/cyborg_like/fake-inventory.yaml.sample.
"""

import yaml

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base

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


class FakeDriver(base.AcceleratorDriver, base.Programmable):
    """Programming is remembered in memory and shown by ``discover``; a
    bitstream whose content starts with ``FAIL`` fails like a vendor tool
    would, with the rest of its first line as the tool's message."""

    name = 'fake'

    def __init__(self, conf):
        super().__init__(conf)
        self._programmed = {}   # (control path, region) -> bitstream id

    def discover(self):
        path = self.conf.fake_driver.inventory_file
        if path:
            with open(path) as f:
                document = yaml.safe_load(f) or {}
        else:
            document = DEFAULT_INVENTORY
        devices = [self._device(d) for d in document.get('devices', [])]
        for device in devices:
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
        self._programmed[self._key(controlpath_id, deployable_name)] = \
            bitstream_id

    @staticmethod
    def _key(controlpath_id, deployable_name):
        return inventory.canonical(controlpath_id), deployable_name

    def _device(self, entry):
        cpid = {'cpid_type': 'PCI',
                'cpid_info': inventory.pci_address_info(entry['pci_address'])}
        return base.Device(
            type=entry['type'], vendor=entry['vendor'], model=entry['model'],
            controlpath_id=cpid,
            std_board_info=entry.get('std_board_info', {}),
            vendor_board_info=entry.get('vendor_board_info', {}),
            deployables=[self._deployable(d)
                         for d in entry.get('deployables', [])])

    def _deployable(self, entry):
        handles = [base.AttachHandle('PCI', inventory.pci_address_info(a))
                   for a in entry.get('pci_functions', [])]
        return base.Deployable(
            name=entry['name'], driver_name=self.name,
            num_accelerators=entry.get('num_accelerators', len(handles)),
            attributes=entry.get('attributes', {}),
            attach_handles=handles,
            bitstream_id=entry.get('bitstream_id'))
