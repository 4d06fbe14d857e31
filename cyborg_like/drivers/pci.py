"""Generic PCI passthrough driver, and the PCI sysfs helpers drivers share.

The ``pci`` driver offers the PCI devices the operator lists in
``[pci_driver] passthrough_whitelist`` (see cyborg_like/conf/pci_driver.py).
Each matching physical function is one device with one deployable; its
SR-IOV virtual functions (the PF's ``virtfn<N>`` links) are the deployable's
attach handles, or, without VFs, the function itself is.

Everything is read through pyudev, i.e. libudev over ``/sys``: on a host that
is the kernel's view, in the tests a umockdev testbed of the same layout.
"""

import dataclasses
import fnmatch
import json
import os
import re

import pyudev

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base

DEVICE_TYPES = ('GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD')

_VIRTFN_LINK = re.compile(r'^virtfn(\d+)\Z')
_PLACEMENT_NAME = re.compile(r'^[A-Z0-9_]{1,255}\Z')
_HEX = re.compile(r'^(0x)?[0-9a-fA-F]+\Z')


# -- PCI sysfs helpers, shared with the FPGA drivers -------------------------

def attribute(device, name):
    """A sysfs attribute of ``device`` as stripped text; None if absent.

    ``name`` may be a path below the device (``errors/first_error``).
    """
    value = device.attributes.get(name)
    if value is None:
        return None
    return value.decode('utf-8', errors='replace').strip()


def hex_id(value, width=4):
    """``'0x8086'`` / ``'8086'`` -> ``'8086'``; None stays None."""
    if value is None:
        return None
    return '%0*x' % (width, int(value, 16))


def pci_ids(device):
    """(vendor, product) of a PCI device, as 4 lower-case hex digits."""
    return (hex_id(attribute(device, 'vendor')),
            hex_id(attribute(device, 'device')))


def pci_class(device):
    """The PCI class code as 6 hex digits (``'020000'``), or None."""
    return hex_id(attribute(device, 'class'), width=6)


def is_virtual_function(device):
    # The kernel links a VF to its PF with ``physfn``; PFs have none.
    return os.path.islink(os.path.join(device.sys_path, 'physfn'))


def virtual_functions(device):
    """PCI addresses of the PF's enabled VFs, in VF-index order.

    ``virtfn<N>`` links exist only while ``sriov_numvfs`` > 0; their number
    is the VF index, which ``os.listdir`` order does not follow.
    """
    found = []
    for name in os.listdir(device.sys_path):
        match = _VIRTFN_LINK.match(name)
        if match:
            target = os.readlink(os.path.join(device.sys_path, name))
            found.append((int(match.group(1)), os.path.basename(target)))
    return [address for _, address in sorted(found)]


def physical_functions(context, ids):
    """PCI PFs whose (vendor, product) is in ``ids``, by address."""
    found = [d for d in context.list_devices(subsystem='pci')
             if pci_ids(d) in ids and not is_virtual_function(d)]
    return sorted(found, key=lambda d: d.sys_name)


def device_at(context, address):
    """The PCI device at ``address``, or None if there is none."""
    try:
        return pyudev.Devices.from_sys_path(
            context, '/sys/bus/pci/devices/' + address)
    except pyudev.DeviceNotFoundError:
        return None


def controlpath_id(address):
    return {'cpid_type': 'PCI',
            'cpid_info': inventory.pci_address_info(address)}


def address_of(controlpath_id):
    """The PCI address a control-path id names (``'0000:5e:00.0'``)."""
    return inventory.pci_address(controlpath_id['cpid_info'])


def full_address(address):
    """An address as an operator writes it (``'3B:00.0'``,
    ``'0000:3b:00.0'``) in the form sysfs and Cyborg use
    (``'0000:3b:00.0'``)."""
    address = address.strip().lower()
    return address if address.count(':') == 2 else '0000:' + address


def attach_handle(address):
    return base.AttachHandle('PCI', inventory.pci_address_info(address))


def board_info(device):
    """Standard board info every PCI-based driver reports."""
    info = {'device_id': '0x' + pci_ids(device)[1]}
    if pci_class(device) is not None:
        info['class'] = '0x' + pci_class(device)
    for name in ('numa_node', 'sriov_totalvfs', 'sriov_numvfs'):
        value = attribute(device, name)
        if value is not None:
            info[name] = value
    return info


# -- the whitelist -----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class WhitelistEntry:
    """One ``passthrough_whitelist`` entry, validated."""
    vendor_id: str
    product_id: str
    device_type: str
    resource_class: str = 'PCI_DEVICE'
    traits: tuple = ()
    class_id: str | None = None
    address: str | None = None

    def matches(self, device):
        if pci_ids(device) != (self.vendor_id, self.product_id):
            return False
        if self.class_id and not (pci_class(device) or '').startswith(
                self.class_id):
            return False
        if self.address and not fnmatch.fnmatch(device.sys_name,
                                                self.address):
            return False
        return True


def _hex_field(spec, key, required):
    value = spec.get(key)
    if value is None:
        if required:
            raise ValueError('"%s" is required' % key)
        return None
    if not isinstance(value, str) or not _HEX.match(value):
        raise ValueError('"%s" must be a hex string, not %r' % (key, value))
    return value.lower().removeprefix('0x')


def _entry(spec):
    if not isinstance(spec, dict):
        raise ValueError('each entry must be a JSON object, not %r' % spec)
    unknown = set(spec) - {f.name for f in dataclasses.fields(WhitelistEntry)}
    if unknown:
        raise ValueError('unknown key(s) %s' % ', '.join(sorted(unknown)))
    device_type = spec.get('device_type')
    if device_type not in DEVICE_TYPES:
        raise ValueError('"device_type" must be one of %s, not %r'
                         % (', '.join(DEVICE_TYPES), device_type))
    names = [spec.get('resource_class', 'PCI_DEVICE')]
    names += list(spec.get('traits', []))
    for name in names:
        if not isinstance(name, str) or not _PLACEMENT_NAME.match(name):
            raise ValueError('%r is not a valid Placement name '
                             '(upper case, digits and _)' % (name,))
    return WhitelistEntry(
        vendor_id=hex_id(_hex_field(spec, 'vendor_id', True)),
        product_id=hex_id(_hex_field(spec, 'product_id', True)),
        class_id=_hex_field(spec, 'class_id', False),
        address=spec.get('address'),
        device_type=device_type,
        resource_class=names[0],
        traits=tuple(names[1:]))


def parse_whitelist(values):
    """``[pci_driver] passthrough_whitelist`` -> list of entries.

    Raises ValueError naming the bad value, so a typo fails at start-up
    instead of silently offering nothing.
    """
    entries = []
    for value in values:
        try:
            document = json.loads(value)
            specs = document if isinstance(document, list) else [document]
            entries.extend(_entry(spec) for spec in specs)
        except ValueError as e:
            raise ValueError('invalid passthrough_whitelist value %r: %s'
                             % (value, e)) from None
    return entries


# -- the driver --------------------------------------------------------------

class PciDriver(base.AcceleratorDriver):
    """Whitelisted PCI functions (and their VFs) for passthrough."""

    name = 'pci'

    def __init__(self, conf):
        super().__init__(conf)
        try:
            self.whitelist = parse_whitelist(
                conf.pci_driver.passthrough_whitelist)
        except ValueError as e:
            raise exception.DriverError(driver=self.name, reason=str(e))

    def discover(self):
        context = pyudev.Context()
        devices = []
        for device in context.list_devices(subsystem='pci'):
            if is_virtual_function(device):
                continue
            entry = self._entry_for(device)
            if entry is not None:
                devices.append(self._device(device, entry))
        return sorted(devices, key=lambda d: address_of(d.controlpath_id))

    def _entry_for(self, device):
        # The first matching entry wins, as in Nova's whitelist.
        return next((e for e in self.whitelist if e.matches(device)), None)

    def _device(self, device, entry):
        vendor, product = pci_ids(device)
        model = (device.properties.get('ID_MODEL_FROM_DATABASE')
                 or 'PCI device %s:%s' % (vendor, product))
        return base.Device(
            type=entry.device_type, vendor='0x' + vendor, model=model,
            controlpath_id=controlpath_id(device.sys_name),
            std_board_info=board_info(device),
            deployables=[self._deployable(device, entry)])

    def _deployable(self, device, entry):
        addresses = virtual_functions(device) or [device.sys_name]
        vendor, product = pci_ids(device)
        id_trait = ('CUSTOM_PCI_%s_%s' % (vendor, product)).upper()
        attributes = {'rc': entry.resource_class, 'trait0': id_trait}
        for index, trait in enumerate(entry.traits, start=1):
            attributes['trait%d' % index] = trait
        return base.Deployable(
            name=device.sys_name, driver_name=self.name,
            num_accelerators=len(addresses), attributes=attributes,
            attach_handles=[attach_handle(a) for a in addresses])
