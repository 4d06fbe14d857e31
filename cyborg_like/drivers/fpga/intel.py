"""Intel PAC cards driven by the kernel's DFL drivers, programmed by OPAE.

The sysfs layout read here is the upstream DFL one (Documentation/fpga/
dfl.rst, ABI sysfs-platform-dfl-fme and -port, sysfs-class-fpga-region), as
OPAE's own enumeration reads it::

    /sys/bus/pci/devices/0000:60:00.0            the PF, driver dfl-pci
      fpga_region/region0                        container region (dfl-pci)
        dfl-fme.0                                FPGA Management Engine
          bitstream_id, ports_num, errors/*, hwmon/hwmonN (dfl_fme_thermal)
          dfl_dev.N/spi_master/spiM/spiM.0       spi-altera to the MAX 10 BMC
            n3000bmc-hwmon.K.auto/hwmon/hwmonJ   its sensors (d5005bmc-...
                                                 on a D5005): tempN_*,
                                                 inN_*, currN_*, powerN_*
          dfl-fme-mgr.0/fpga_manager/fpga0       the PR engine
          dfl-fme-bridge.0.auto/fpga_bridge/br0
          dfl-fme-region.0/fpga_region/region1   one per port (PR slot)
            compat_id                            the PR interface id
        dfl-port.0                               the port (AFU slot)
          id, afu_id, errors/errors
      virtfn0 -> ../0000:60:00.1                 VF i carries port i once
                                                 SR-IOV is enabled

PR slot i is deployable ``region<i>``: its compatibility key is the
``compat_id`` of the i-th ``dfl-fme-region`` (the kernel creates them in
port order), or the FME's ``pr/interface_id`` with OPAE's older out-of-tree
driver (intel-fpga-pci: intel-fpga-fme.N and intel-fpga-port.N, no FME
regions). With SR-IOV enabled the port has been released to VF i, which is
the attach handle; otherwise the PF is. The loaded bitstream's id is the
port's ``afu_id`` (the AFU id in the GBS metadata), readable while the port
sits on the PF or on a VF bound to dfl-pci.
"""

import re

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers.fpga import bitstream
from cyborg_like.drivers.fpga import driver
from cyborg_like.drivers.fpga import sensors
from cyborg_like.drivers import pci

MODELS = {'0b30': 'PAC N3000', '0b2b': 'PAC D5005', '09c4': 'PAC Arria 10 GX'}

# Upstream DFL names first, then the out-of-tree intel-fpga driver's.
PCI_DRIVERS = ('dfl-pci', 'intel-fpga-pci')
_FME = r'^(dfl|intel-fpga)-fme\.\d+$'
_PORT = r'^(dfl|intel-fpga)-port\.\d+$'
_FME_REGION = r'^dfl-fme-region\.\d+$'
# FME error registers (dfl-fme-error.c, sysfs-platform-dfl-fme); anything
# non-zero is a latched hardware error an operator must look at.
FME_ERRORS = ('errors/catfatal_errors', 'errors/nonfatal_errors',
              'errors/fme_errors', 'errors/pcie0_errors',
              'errors/pcie1_errors', 'errors/first_error')
# Non-zero while errors are injected on purpose: a warning, not a fault.
INJECT_ERRORS = 'errors/inject_errors'
# The MAX 10 BMC's hwmon (drivers/hwmon/intel-m10-bmc-hwmon.c), by the
# name the hwmon core registers (the platform id with '-' made '_').
BMC_HWMONS = ('n3000bmc_hwmon', 'd5005bmc_hwmon')
# Labels of the FPGA's own temperature: N3000, then D5005.
FPGA_TEMPERATURES = ('FPGA Die Temperature', 'FPGA Core Temperature')
# The N3000's one power channel (the D5005's BMC exposes none).
BOARD_POWER = 'Board Power'


def _fme(card):
    found = driver.children(card, _FME)
    return found[0] if found else None


def _afu_id(port):
    if port is None:
        return None
    return bitstream.uuid_hex(pci.attribute(port, 'afu_id'))


def _nonzero(value):
    try:
        return value is not None and int(value, 16) != 0
    except ValueError:
        return True


class IntelFPGADriver(driver.FPGADriver):
    name = 'intel_fpga'
    group = 'intel_fpga'
    tool_name = 'fpgaconf'
    tool_option = 'fpgaconf_path'
    flash_tool_name = 'fpgasupdate'
    flash_tool_option = 'fpgasupdate_path'

    def _describe(self, context, card):
        product = pci.pci_ids(card)[1]
        model = MODELS.get(product, 'Intel FPGA 0x' + product)
        fme = _fme(card)
        info = {}
        if fme is not None:
            info = {'fme': fme.sys_name,
                    'bitstream_id': pci.attribute(fme, 'bitstream_id'),
                    'ports_num': pci.attribute(fme, 'ports_num'),
                    'pr_interface_ids': [bitstream.uuid_text(i) for i in
                                         self._interface_ids(fme)]}
        trait = 'CUSTOM_FPGA_INTEL_' + re.sub(r'\W', '_', model.upper())
        return model, info, ['CUSTOM_FPGA_INTEL', trait]

    def _regions(self, context, card):
        fme = _fme(card) if card.driver in PCI_DRIVERS else None
        if fme is None:         # no FPGA driver bound: no tree to read
            return []
        ports = self._ports(context, card)
        vfs = pci.virtual_functions(card)
        regions = []
        for index, interface_id in enumerate(self._interface_ids(fme)):
            port = ports.get(index)
            regions.append(driver.Region(
                name='region%d' % index,
                interface_ids=[interface_id] if interface_id else [],
                handles=[vfs[index] if index < len(vfs) else card.sys_name],
                loaded=_afu_id(port),
                readable=port is not None))
        return regions

    @staticmethod
    def _interface_ids(fme):
        regions = [c for r in driver.children(fme, _FME_REGION)
                   for c in r.children if c.subsystem == 'fpga_region']
        if regions:
            return [bitstream.uuid_hex(pci.attribute(r, 'compat_id'))
                    for r in regions]
        # The out-of-tree intel-fpga driver had one slot and no FME regions.
        return [bitstream.uuid_hex(pci.attribute(fme, 'pr/interface_id'))]

    @staticmethod
    def _ports(context, card):
        """Visible ports by port id: on the PF, or on VFs bound to dfl-pci
        (a VF bound to vfio-pci hides its port from the host)."""
        functions = [card] + [pci.device_at(context, a)
                              for a in pci.virtual_functions(card)]
        ports = {}
        for function in functions:
            if function is None:
                continue
            for port in driver.children(function, _PORT):
                ports[int(pci.attribute(port, 'id') or 0)] = port
        return ports

    def _program_argv(self, tool_path, card, region, bitstream_path):
        # fpgaconf always programs PR slot 0 of the FME it selects.
        if region.name != 'region0':
            raise exception.DriverError(
                driver=self.name, reason='fpgaconf programs PR slot 0 only; '
                                         'cannot program %s' % region.name)
        info = inventory.pci_address_info(card.sys_name)
        argv = [tool_path, '--segment', '0x' + info['domain'],
                '-B', '0x' + info['bus'], '-D', '0x' + info['device'],
                '-F', '0x' + info['function']]
        if not region.readable:
            # The port lives in a VF the host cannot open, so fpgaconf
            # cannot check it is idle; the conductor only programs a region
            # before handing it out.
            argv.append('--force')
        return argv + [bitstream_path]

    def _flash_argv(self, tool_path, card, image_path):
        # fpgasupdate <file> <bdf>; no --yes: the prompts it asks are
        # for root-key and key-cancellation images, which must not be
        # confirmed unattended (stdin is closed, so they fail).
        return [tool_path, image_path, card.sys_name]

    def _health(self, context, card):
        if card.driver not in PCI_DRIVERS:
            return driver.CardHealth(reasons=[
                '%s is not bound to dfl-pci (driver: %s)'
                % (card.sys_name, card.driver or 'none')])
        fme = _fme(card)
        if fme is None:
            return driver.CardHealth(
                reasons=['no FME found under %s' % card.sys_name])
        found = driver.CardHealth()
        for name in FME_ERRORS:
            value = pci.attribute(fme, name)
            if _nonzero(value):
                found.reasons.append('%s %s = %s'
                                     % (fme.sys_name, name, value))
        injected = pci.attribute(fme, INJECT_ERRORS)
        if _nonzero(injected):
            # Errors injected on purpose (testing the RAS path) show in
            # the registers above too; the injection itself is no fault.
            found.warnings.append('%s %s = %s: errors are being injected'
                                  % (fme.sys_name, INJECT_ERRORS, injected))
        for port in self._ports(context, card).values():
            value = pci.attribute(port, 'errors/errors')
            if _nonzero(value):
                found.reasons.append('%s errors = %s'
                                     % (port.sys_name, value))
        self._sensors(card, fme, found)
        return found

    @staticmethod
    def _sensors(card, fme, found):
        """The BMC's sensors (intel-m10-bmc-hwmon) and the FME's own
        thermal hwmon, judged against their max/crit; utilization gets
        the FPGA temperature, board power and every labelled
        temperature."""
        bmc, others = [], []
        for hwmon in sensors.hwmons(card):
            (bmc if sensors.name(hwmon) in BMC_HWMONS else others).append(
                hwmon)
        temperatures = {}
        for hwmon in bmc:
            read = sensors.read(hwmon)
            reasons, warnings = sensors.judge(read, 'BMC sensor')
            found.reasons += reasons
            found.warnings += warnings
            for sensor in read:
                if sensor.kind == 'temp':
                    temperatures[sensor.label] = sensor.value
                elif sensor.kind == 'power' and \
                        sensor.label == BOARD_POWER:
                    found.utilization['board_power_w'] = sensor.value
        for hwmon in others:
            if not hwmon.sys_path.startswith(fme.sys_path + '/'):
                continue
            read = sensors.read(hwmon)
            reasons, warnings = sensors.judge(read, fme.sys_name + ' sensor')
            found.reasons += reasons
            found.warnings += warnings
            fme_temperature = [s.value for s in read if s.kind == 'temp']
            if fme_temperature and 'temperature_c' not in found.utilization:
                found.utilization['temperature_c'] = fme_temperature[0]
        fpga = [temperatures[label] for label in FPGA_TEMPERATURES
                if label in temperatures]
        if fpga:
            found.utilization['temperature_c'] = fpga[0]
        if temperatures:
            found.utilization['temperatures_c'] = temperatures
        if not bmc:
            found.unchecked.append(
                'BMC sensors: no %s hwmon below %s (intel-m10-bmc-hwmon '
                'not loaded, or a card without a MAX 10 BMC)'
                % (' or '.join(BMC_HWMONS), card.sys_name))
