"""What the FPGA drivers share.

A card is one device, named by the PCI function that manages it (Intel's PF
with the FME, Alveo's management PF). Each partial-reconfiguration region
of the card is one deployable named ``region<N>`` (N counts the card's PR
regions from 0), whose attach handles are the PCI functions an instance gets
to use that region. A region's compatibility key (the PR interface id the
bitstream must be built for) becomes the trait
``CUSTOM_FPGA_INTERFACE_<32 hex digits>``, so Placement only picks regions a
requested bitstream fits.

Subclasses describe their hardware through a few hooks (``_cards``,
``_regions``, ``_describe``, ``_program_argv``, ``_flash_argv``,
``_health``); this class turns that into inventory, programs, flashes card
firmware, reports health and erases on release.
"""

import dataclasses
import re
import threading

import pyudev

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base
from cyborg_like.drivers.fpga import bitstream
from cyborg_like.drivers.fpga import records
from cyborg_like.drivers.fpga import tool
from cyborg_like.drivers import pci


@dataclasses.dataclass
class Region:
    """One PR region of a card, as read from sysfs."""
    name: str                   # the deployable's name, region<N>
    interface_ids: list         # compatibility keys, 32 hex digits each
    handles: list               # PCI addresses given to instances
    loaded: str | None = None   # id of the loaded bitstream (32 hex)
    readable: bool = True       # False: the host cannot see what is loaded


@dataclasses.dataclass
class CardHealth:
    """What ``_health`` found on one card: ``reasons`` make it unhealthy,
    ``warnings`` (a sensor above its maximum, not yet critical) only go
    into the utilization under ``warnings``, ``unchecked`` names what
    could not be looked at (see base.DeviceHealth)."""
    reasons: list = dataclasses.field(default_factory=list)
    utilization: dict = dataclasses.field(default_factory=dict)
    warnings: list = dataclasses.field(default_factory=list)
    unchecked: list = dataclasses.field(default_factory=list)


def parse_ids(values):
    """``['8086:0b30']`` -> ``{('8086', '0b30')}``."""
    ids = set()
    for value in values:
        vendor, _, product = value.partition(':')
        ids.add((pci.hex_id(vendor), pci.hex_id(product)))
    return ids


def children(device, pattern):
    """Descendants of ``device`` whose name matches ``pattern``, in
    natural order (``dfl-fme-region.10`` after ``dfl-fme-region.9``)."""
    regex = re.compile(pattern)
    found = [d for d in device.children if regex.match(d.sys_name)]
    return sorted(found, key=lambda d: _natural(d.sys_name))


def _natural(name):
    return [int(part) if part.isdigit() else part
            for part in re.split(r'(\d+)', name)]


class FPGADriver(base.AcceleratorDriver, base.Programmable,
                 base.HealthReporting, base.AttachPreparing, base.Flashable):
    #: Set by subclasses: their option group, tool and its path option.
    group = None
    tool_name = None
    tool_option = None
    #: Set by subclasses: the tool that flashes card firmware, its option.
    flash_tool_name = None
    flash_tool_option = None
    #: Set by subclasses: ids of the functions that name a card.
    ids_option = 'device_ids'

    def __init__(self, conf):
        super().__init__(conf)
        self.options = conf[self.group]
        self.card_ids = parse_ids(self.options[self.ids_option])
        self.records = records.ProgrammedRecords(conf.state_path, self.name)
        # One programming at a time: the tools are not meant to run
        # concurrently on one card, and erase-on-release may race a bind.
        self._program_lock = threading.Lock()

    # -- discovery --------------------------------------------------------

    def discover(self):
        context = pyudev.Context()
        return [self._device(context, card) for card in self._cards(context)]

    def _cards(self, context):
        return pci.physical_functions(context, self.card_ids)

    def _device(self, context, card):
        model, vendor_info, traits = self._describe(context, card)
        return base.Device(
            type='FPGA', vendor='0x' + pci.pci_ids(card)[0], model=model,
            controlpath_id=pci.controlpath_id(card.sys_name),
            std_board_info=pci.board_info(card),
            vendor_board_info=vendor_info,
            deployables=[self._deployable(card, region, traits)
                         for region in self._regions(context, card)])

    def _deployable(self, card, region, traits):
        names = list(traits) + ['CUSTOM_PROGRAMMABLE']
        names += ['CUSTOM_FPGA_INTERFACE_' + i.upper()
                  for i in region.interface_ids]
        attributes = {'rc': 'FPGA'}
        attributes.update(('trait%d' % n, t) for n, t in enumerate(names))
        return base.Deployable(
            name=region.name, driver_name=self.name, num_accelerators=1,
            attributes=attributes,
            attach_handles=[pci.attach_handle(a) for a in region.handles],
            bitstream_id=bitstream.uuid_text(
                self._loaded(card.sys_name, region)))

    def _loaded(self, address, region):
        if region.readable:
            return region.loaded
        return self.records.get(address, region.name)

    # -- programming ------------------------------------------------------

    def program(self, controlpath_id, deployable_name, bitstream_path,
                bitstream_id, sha256=None):
        """Program a region; see base.Programmable.

        ``sha256`` is the expected digest of the file; without it the file
        ``<bitstream_path>.sha256`` gives it (see bitstream.py). After the
        tool succeeds the region's loaded id is read back from sysfs and
        must equal ``bitstream_id``, a UUID (the AFU id of a GBS, the uuid
        of an xclbin). ``bitstream_id`` None accepts whatever was loaded.
        """
        address = pci.address_of(controlpath_id)
        if bitstream_id and bitstream.uuid_hex(bitstream_id) is None:
            # Only a UUID can be compared with what the hardware reports.
            raise exception.DriverError(
                driver=self.name,
                reason='bitstream id %r is not a UUID' % bitstream_id)
        with self._program_lock:
            context = pyudev.Context()
            card = self._card(context, address)
            region = self._region(context, card, deployable_name)
            bitstream.verify(self.name, bitstream_path, sha256,
                             self.options.require_bitstream_checksum)
            path = tool.locate(self.name, self.tool_name,
                               self.options[self.tool_option],
                               '[%s] %s' % (self.group, self.tool_option))
            tool.run(self.name,
                     self._program_argv(path, card, region, bitstream_path),
                     self.options.program_timeout)
            self._confirm(address, deployable_name, bitstream_id)

    # -- card firmware ----------------------------------------------------

    def firmware_versions(self, controlpath_id):
        """What the card reports of its firmware: the vendor board info
        discovery shows (FIM bitstream id and PR interface ids; platform,
        logic and interface uuids)."""
        context = pyudev.Context()
        card = self._card(context, pci.address_of(controlpath_id))
        return self._describe(context, card)[1]

    def flash_firmware(self, controlpath_id, image_path, sha256=None):
        """Flash the card with its vendor's tool; see base.Flashable.
        The image's sha256 is checked as a bitstream's is. The tool gets
        no option that would skip the card's own checks (signatures,
        board match): a refusal is reported, never worked around."""
        address = pci.address_of(controlpath_id)
        with self._program_lock:
            card = self._card(pyudev.Context(), address)
            bitstream.verify(self.name, image_path, sha256,
                             self.options.require_bitstream_checksum)
            path = tool.locate(self.name, self.flash_tool_name,
                               self.options[self.flash_tool_option],
                               '[%s] %s' % (self.group,
                                            self.flash_tool_option))
            tool.run(self.name, self._flash_argv(path, card, image_path),
                     self.options.flash_timeout)

    def _card(self, context, address):
        card = pci.device_at(context, address)
        if card is None or pci.pci_ids(card) not in self.card_ids:
            raise exception.DriverError(
                driver=self.name, reason='no card of this driver at %s'
                                         % address)
        return card

    def _region(self, context, card, name):
        for region in self._regions(context, card):
            if region.name == name:
                return region
        raise exception.DriverError(
            driver=self.name,
            reason='card %s has no region %s' % (card.sys_name, name))

    def _confirm(self, address, name, bitstream_id):
        # A fresh context: libudev caches attribute values per device.
        context = pyudev.Context()
        region = self._region(context, self._card(context, address), name)
        expected = bitstream.uuid_hex(bitstream_id) if bitstream_id else None
        if region.readable:
            if expected and region.loaded != expected:
                raise exception.DriverError(
                    driver=self.name,
                    reason='after programming, %s %s reports bitstream %s, '
                           'not %s' % (address, name,
                                       bitstream.uuid_text(region.loaded),
                                       bitstream_id))
            loaded = region.loaded
        else:
            loaded = expected
        self.records.put(address, name, loaded)

    # -- health -----------------------------------------------------------

    def health(self):
        context = pyudev.Context()
        readings = []
        for card in self._cards(context):
            found = self._health(context, card)
            utilization = dict(found.utilization)
            if found.warnings:
                utilization['warnings'] = list(found.warnings)
            readings.append(base.DeviceHealth(
                controlpath_id=pci.controlpath_id(card.sys_name),
                healthy=not found.reasons, reasons=list(found.reasons),
                utilization=utilization, unchecked=list(found.unchecked)))
        return readings

    # -- attach handles ---------------------------------------------------

    def prepare_attach_handle(self, controlpath_id, attach_handle):
        # A PCI function needs nothing created before it is handed out.
        return base.unpack_handle(attach_handle)[1]

    def release_attach_handle(self, controlpath_id, attach_handle):
        """Erase the handle's region when ``erase_on_release`` is set."""
        if not self.options.erase_on_release:
            return False
        if not self.options.erase_bitstream:
            raise exception.DriverError(
                driver=self.name,
                reason='erase_on_release is set but [%s] erase_bitstream '
                       'is not' % self.group)
        handle = inventory.pci_address(base.unpack_handle(attach_handle)[1])
        region = self._region_with_handle(controlpath_id, handle)
        self.program(controlpath_id, region.name,
                     self.options.erase_bitstream, None)
        return True

    def _region_with_handle(self, controlpath_id, handle):
        context = pyudev.Context()
        card = self._card(context, pci.address_of(controlpath_id))
        for region in self._regions(context, card):
            if handle in region.handles:
                return region
        raise exception.DriverError(
            driver=self.name, reason='no region of %s is attached through %s'
                                     % (card.sys_name, handle))

    # -- hooks ------------------------------------------------------------

    def _describe(self, context, card):
        """Return (model, vendor_board_info, vendor traits)."""
        raise NotImplementedError

    def _regions(self, context, card):
        """Return the card's regions (list of :class:`Region`)."""
        raise NotImplementedError

    def _flash_argv(self, tool_path, card, image_path):
        """The command line flashing ``image_path`` onto ``card``."""
        raise NotImplementedError

    def _program_argv(self, tool_path, card, region, bitstream_path):
        """Return the vendor tool's command line programming ``region``."""
        raise NotImplementedError

    def _health(self, context, card):
        """Return a :class:`CardHealth`."""
        raise NotImplementedError
