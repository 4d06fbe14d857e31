"""Xilinx Alveo cards driven by XRT (xclmgmt + xocl), programmed by xbmgmt.

An Alveo card shows two PCI physical functions on one slot: the management
PF (U250: 10ee:5004, driver xclmgmt) and the user PF (10ee:5005, driver
xocl). The sysfs read here is XRT's (XRT docs "Linux Sys FileSystem Nodes"
and the query table of XRT's device_linux.cpp)::

    /sys/bus/pci/devices/0000:3b:00.0     management PF, driver xclmgmt
      board_name, ready, dev_offline
      interface_uuids   the shell's interface uuid(s), one per line,
                        32 hex digits: an xclbin must be built for one
      logic_uuids       the base (BLP) logic uuid first
      rom.m.<N>/VBNV    the platform name
      firewall.m.<N>/detected_status   non-zero once an AXI firewall trips
      xmc.m.<N>/xmc_fpga_temp          FPGA temperature, degrees C
    /sys/bus/pci/devices/0000:3b:00.1     user PF, driver xocl
      xclbinuuid        uuid of the loaded xclbin (dashed, all zeros if
                        none)

The card is one device named by its management PF with one deployable,
``region0`` (the user partition), whose compatibility keys are the
``interface_uuids`` and whose attach handle is the user PF. The loaded id is
read back from the user PF's ``xclbinuuid`` while xocl drives it; once the
user PF is passed through (vfio-pci) the driver reports what it recorded.
"""

import re

from cyborg_like.drivers.fpga import bitstream
from cyborg_like.drivers.fpga import driver
from cyborg_like.drivers import pci

MODELS = {'5004': 'Alveo U250', '5000': 'Alveo U200'}
_NO_XCLBIN = '0' * 32


def _child_attribute(card, pattern, name):
    """Attribute ``name`` of the card's first subdevice matching
    ``pattern`` (XRT names them <kind>.m.<instance>), or None."""
    found = driver.children(card, pattern)
    return pci.attribute(found[0], name) if found else None


def _uuid_lines(card, name):
    text = pci.attribute(card, name) or ''
    return [u for u in map(bitstream.uuid_hex, text.split()) if u]


class XilinxFPGADriver(driver.FPGADriver):
    name = 'xilinx_fpga'
    group = 'xilinx_fpga'
    tool_name = 'xbmgmt'
    tool_option = 'xbmgmt_path'
    flash_tool_name = 'xbmgmt'
    flash_tool_option = 'xbmgmt_path'
    ids_option = 'mgmt_device_ids'

    def __init__(self, conf):
        super().__init__(conf)
        self.user_ids = driver.parse_ids(self.options.user_device_ids)

    def _describe(self, context, card):
        product = pci.pci_ids(card)[1]
        board = pci.attribute(card, 'board_name')
        model = MODELS.get(product) or (
            'Alveo %s' % board.upper() if board else 'Xilinx 0x' + product)
        logic = _uuid_lines(card, 'logic_uuids')
        info = {'vbnv': _child_attribute(card, r'^rom\.m\.\d+$', 'VBNV'),
                'logic_uuid': bitstream.uuid_text(logic[0]) if logic else None,
                'interface_uuids': [bitstream.uuid_text(u) for u in
                                    _uuid_lines(card, 'interface_uuids')]}
        user = self._user_function(context, card)
        if user is not None:
            info['user_function'] = user.sys_name
        trait = 'CUSTOM_FPGA_XILINX_' + re.sub(r'\W', '_', model.upper())
        return model, info, ['CUSTOM_FPGA_XILINX', trait]

    def _user_function(self, context, card):
        """The user PF on the card's slot (XRT puts it beside the mgmt PF)."""
        slot = card.sys_name.rpartition('.')[0]
        for function in context.list_devices(subsystem='pci'):
            if (function.sys_name.startswith(slot + '.')
                    and pci.pci_ids(function) in self.user_ids):
                return function
        return None

    def _regions(self, context, card):
        interface_ids = _uuid_lines(card, 'interface_uuids')
        if not interface_ids:   # xclmgmt not bound, or no shell loaded
            return []
        user = self._user_function(context, card)
        if user is None:
            return [driver.Region('region0', interface_ids, [],
                                  readable=False)]
        # Absent once the user PF is passed through (vfio-pci, no xocl).
        loaded = bitstream.uuid_hex(pci.attribute(user, 'xclbinuuid'))
        return [driver.Region(
            name='region0', interface_ids=interface_ids,
            handles=[user.sys_name],
            loaded=None if loaded == _NO_XCLBIN else loaded,
            readable=loaded is not None)]

    def _program_argv(self, tool_path, card, region, bitstream_path):
        # XRT's documented form: xbmgmt program --device <mgmt bdf>
        # --user <xclbin> (the user partition, through the mgmt PF).
        return [tool_path, 'program', '--device', card.sys_name,
                '--user', bitstream_path]

    def _flash_argv(self, tool_path, card, image_path):
        # XRT's form for the card's base (flash) image: xbmgmt program
        # --base --device <mgmt bdf> --image <file>; nothing that skips
        # XRT's checks of the image against the card.
        return [tool_path, 'program', '--base', '--device', card.sys_name,
                '--image', image_path]

    def _health(self, context, card):
        reasons = []
        if card.driver != 'xclmgmt':
            reasons.append('%s is not bound to xclmgmt (driver: %s)'
                           % (card.sys_name, card.driver or 'none'))
        user = self._user_function(context, card)
        if user is None:
            reasons.append('no user function beside %s' % card.sys_name)
        elif user.driver is None:
            reasons.append('user function %s has no driver' % user.sys_name)
        if pci.attribute(card, 'ready') in ('0', '0x0'):
            reasons.append('the shell on %s is not ready' % card.sys_name)
        if pci.attribute(card, 'dev_offline') == '1':
            reasons.append('%s is offline' % card.sys_name)
        reasons += self._firewall_trips(card)
        return reasons, self._utilization(card)

    @staticmethod
    def _firewall_trips(card):
        trips = []
        for firewall in driver.children(card, r'^firewall\.m\.\d+$'):
            status = pci.attribute(firewall, 'detected_status')
            if status and int(status, 16) != 0:
                trips.append('AXI firewall %s tripped (status %s, level %s)'
                             % (firewall.sys_name, status,
                                pci.attribute(firewall, 'detected_level')))
        return trips

    @staticmethod
    def _utilization(card):
        value = _child_attribute(card, r'^xmc\.m\.\d+$', 'xmc_fpga_temp')
        return {'temperature_c': float(value)} if value else {}
