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

Health is the sysfs checks above (driver bindings, ready, offline, AXI
firewall trips, the XMC's FPGA temperature) plus XRT's own sensor report,
``xbutil examine --device <user bdf> --report electrical thermal mechanical
--format JSON --output <file>``: board power against the card's maximum,
temperatures against ``[xilinx_fpga] critical_temperature_c``, fans and
power rails as utilization. xbutil reaches the card through the user PF,
so while that is passed through the report is listed as unchecked; so is
a failing or hanging tool (bounded by ``examine_timeout``). A report, or
its failure, is reused for ``examine_cache_seconds``.
"""

import json
import os
import re
import tempfile
import threading
import time

from cyborg_like.common import exception
from cyborg_like.drivers.fpga import bitstream
from cyborg_like.drivers.fpga import driver
from cyborg_like.drivers.fpga import tool
from cyborg_like.drivers import pci

MODELS = {'5004': 'Alveo U250', '5000': 'Alveo U200'}
_NO_XCLBIN = '0' * 32
# xbutil's reports with the card's sensors (xbmgmt's examine has only
# mechanical among them: electrical and thermal are user-side reports).
EXAMINE_REPORTS = ('electrical', 'thermal', 'mechanical')
_UNCHECKED = 'XRT sensors (xbutil examine): '


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
        # mgmt address -> (monotonic time, (device report, error)).
        self._examined = {}
        self._examine_lock = threading.Lock()

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
        found = driver.CardHealth()
        if card.driver != 'xclmgmt':
            found.reasons.append('%s is not bound to xclmgmt (driver: %s)'
                                 % (card.sys_name, card.driver or 'none'))
        user = self._user_function(context, card)
        if user is None:
            found.reasons.append('no user function beside %s'
                                 % card.sys_name)
        elif user.driver is None:
            found.reasons.append('user function %s has no driver'
                                 % user.sys_name)
        if pci.attribute(card, 'ready') in ('0', '0x0'):
            found.reasons.append('the shell on %s is not ready'
                                 % card.sys_name)
        if pci.attribute(card, 'dev_offline') == '1':
            found.reasons.append('%s is offline' % card.sys_name)
        found.reasons += self._firewall_trips(card)
        found.utilization.update(self._utilization(card))
        report, error = self._examine(card, user)
        if error is not None:
            found.unchecked.append(_UNCHECKED + error)
        else:
            examined = read_examine(report,
                                    self.options.critical_temperature_c)
            found.reasons += examined.reasons
            found.warnings += examined.warnings
            found.utilization.update(examined.utilization)
        return found

    def _examine(self, card, user):
        """(this card's device entry of xbutil's examine report, None) or
        (None, why there is none), reused for [xilinx_fpga]
        examine_cache_seconds."""
        if user is None:
            return None, 'no user function beside %s' % card.sys_name
        if user.driver != 'xocl':
            return None, ('the user function %s is not on xocl (driver: '
                          '%s), xbutil cannot reach it'
                          % (user.sys_name, user.driver or 'none'))
        with self._examine_lock:
            cached = self._examined.get(card.sys_name)
            now = time.monotonic()
            if cached and now - cached[0] < \
                    self.options.examine_cache_seconds:
                return cached[1]
            result = self._run_examine(user.sys_name)
            self._examined[card.sys_name] = (now, result)
            return result

    def _run_examine(self, address):
        try:
            path = tool.locate(self.name, 'xbutil', self.options.xbutil_path,
                               '[%s] xbutil_path' % self.group)
            # A new directory: xbutil refuses to overwrite a file.
            with tempfile.TemporaryDirectory(
                    prefix='cyborg-like-examine-') as directory:
                output = os.path.join(directory, 'examine.json')
                tool.run(self.name,
                         [path, 'examine', '--device', address,
                          '--report', *EXAMINE_REPORTS,
                          '--format', 'JSON', '--output', output],
                         self.options.examine_timeout)
                with open(output) as f:
                    report = json.load(f)
        except exception.DriverError as e:
            return None, e.kwargs['reason']
        except (OSError, ValueError) as e:
            return None, 'unreadable report: %s' % e
        for device in report.get('devices') or []:
            if str(device.get('device_id', '')).lower() == address:
                return device, None
        return None, 'the report has no device %s' % address

    @staticmethod
    def _firewall_trips(card):
        trips = []
        for firewall in driver.children(card, r'^firewall\.m\.\d+\Z'):
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


def _number(value):
    """XRT's JSON holds every value as text ('38', '12.134', 'N/A')."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _present(entry):
    return isinstance(entry, dict) and entry.get('is_present') == 'true'


def read_examine(device, critical_c):
    """A :class:`driver.CardHealth` from one device entry of xbutil's
    ``examine --format JSON`` (XRT's sensor.cpp: ``electrical`` with
    ``power_rails``, ``power_consumption_watts`` and ``_max_watts``,
    ``power_consumption_warning``; ``thermals``; ``mechanical.fans``).
    Sensors XRT marks not present are left out."""
    found = driver.CardHealth()
    electrical = device.get('electrical') or {}
    power = _number(electrical.get('power_consumption_watts'))
    maximum = _number(electrical.get('power_consumption_max_watts'))
    if power is not None:
        found.utilization['board_power_w'] = power
    if maximum is not None:
        found.utilization['board_power_max_w'] = maximum
    if power is not None and maximum is not None and power > maximum:
        found.reasons.append('XRT board power reads %g W, above the '
                             'card\'s maximum %g W' % (power, maximum))
    if electrical.get('power_consumption_warning') == 'true':
        found.warnings.append('XRT reports a power warning on the card')
    rails = {}
    for rail in electrical.get('power_rails') or []:
        values = {}
        for part, unit in (('voltage', 'volts'), ('current', 'amps')):
            reading = rail.get(part)
            if _present(reading) and _number(reading.get(unit)) is not None:
                values[unit] = _number(reading.get(unit))
                if _number(reading.get('max')) is not None:
                    values['max_' + unit] = _number(reading['max'])
        if values:
            rails[rail.get('id') or rail.get('description')] = values
    if rails:
        found.utilization['power_rails'] = rails
    temperatures = {}
    thermals = device.get('thermals')
    for thermal in thermals if isinstance(thermals, list) else []:
        value = _number(thermal.get('temp_C'))
        if not _present(thermal) or value is None:
            continue
        temperatures[thermal.get('description')] = value
        if value >= critical_c:
            found.reasons.append(
                'XRT thermal %s reads %g °C, at or above the critical %g °C '
                '([xilinx_fpga] critical_temperature_c)'
                % (thermal.get('description'), value, critical_c))
    if temperatures:
        found.utilization['temperatures_c'] = temperatures
    fans = (device.get('mechanical') or {}).get('fans')
    speeds = {fan.get('description'): int(_number(fan.get('speed_rpm')))
              for fan in (fans if isinstance(fans, list) else [])
              if _present(fan) and _number(fan.get('speed_rpm')) is not None}
    if speeds:
        found.utilization['fans_rpm'] = speeds
    return found
