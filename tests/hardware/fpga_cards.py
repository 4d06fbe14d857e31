"""What the FPGA driver tests ask of a testbed with one card, and the
card parts added to a testbed at run time (a copy of the testbed, see
conftest.Testbed): the MAX 10 BMC's sensors of a PAC, the XMC's sensors
of an Alveo.

Sensor sets follow the kernel's drivers/hwmon/intel-m10-bmc-hwmon.c
(channels, labels, which ones have max/crit; hwmon units: millidegree C,
mV, mA, uW) and XRT's xmc sysfs (xmc_* attributes: degrees C, mV, mA,
uW). Values are illustrative, not recorded from a card.
"""

import os


def only_region(driver):
    """The one region of the one card the driver finds."""
    [device] = driver.discover()
    [region] = device.deployables
    return region


# -- adding devices to a testbed ----------------------------------------------

def add_device(testbed, sys_path, subsystem, attributes, kind='class',
               driver=None):
    """Create the device directory ``sys_path`` (below a real /sys/devices
    path of the testbed) as the kernel would show it: ``uevent``, the
    ``subsystem`` link (to /sys/class/<subsystem> or /sys/bus/<subsystem>),
    the class link, and attribute files (values as sysfs prints them)."""
    directory = testbed.path(sys_path)
    os.makedirs(directory, exist_ok=True)
    target = testbed.path('/sys/%s/%s' % (kind, subsystem))
    os.makedirs(target, exist_ok=True)
    os.symlink(os.path.relpath(target, directory),
               os.path.join(directory, 'subsystem'))
    uevent = 'SUBSYSTEM=%s\n' % subsystem
    if driver:
        uevent += 'DRIVER=%s\n' % driver
    with open(os.path.join(directory, 'uevent'), 'w') as f:
        f.write(uevent)
    if kind == 'class':
        os.symlink(os.path.relpath(directory, target),
                   os.path.join(target, os.path.basename(directory)))
    for name, value in attributes.items():
        with open(os.path.join(directory, name), 'w') as f:
            f.write('%s\n' % value)
    return sys_path


def real_sys_path(testbed, sys_path):
    """``/sys/bus/pci/devices/X`` -> its ``/sys/devices/...`` path."""
    real = os.path.realpath(testbed.path(sys_path))
    return '/' + os.path.relpath(real, testbed.root)


# -- Intel PAC: the MAX 10 BMC's hwmon ---------------------------------------

def _sensor(kind, number, label, value, maximum=None, critical=None):
    prefix = '%s%d' % (kind, number)
    found = {prefix + '_label': label, prefix + '_input': value}
    if maximum is not None:
        found[prefix + '_max'] = maximum
    if critical is not None:
        found[prefix + '_crit'] = critical
    return found


def n3000_bmc_sensors():
    """n3000bmc-hwmon's channels (temp1-4 with max and crit, the rest
    input and label only; voltages count from in0, as the hwmon core
    numbers them, the other kinds from 1). QSFP1's cage is empty: the BMC
    answers 0xdeadbeef and the kernel ENODATA, which a file cannot show,
    so the file is left out."""
    sensors = {}
    for part in (
            _sensor('temp', 1, 'Board Temperature', 36000, 85000, 95000),
            _sensor('temp', 2, 'FPGA Die Temperature', 52500, 90000, 100000),
            _sensor('temp', 3, 'QSFP0 Temperature', 31000, 80000, 85000),
            {'temp4_label': 'QSFP1 Temperature', 'temp4_max': 80000,
             'temp4_crit': 85000},
            _sensor('temp', 5, 'Retimer A Temperature', 48000),
            _sensor('temp', 6, 'Retimer A SerDes Temperature', 49500),
            _sensor('temp', 7, 'Retimer B Temperature', 47500),
            _sensor('temp', 8, 'Retimer B SerDes Temperature', 49000),
            _sensor('in', 0, 'QSFP0 Supply Voltage', 3300),
            _sensor('in', 1, 'QSFP1 Supply Voltage', 0),
            _sensor('in', 2, 'FPGA Core Voltage', 900),
            _sensor('in', 3, '12V Backplane Voltage', 12080),
            _sensor('in', 4, '1.2V Voltage', 1198),
            _sensor('in', 5, '12V AUX Voltage', 12020),
            _sensor('in', 6, '1.8V Voltage', 1801),
            _sensor('in', 7, '3.3V Voltage', 3302),
            _sensor('curr', 1, 'FPGA Core Current', 21500),
            _sensor('curr', 2, '12V Backplane Current', 2950),
            _sensor('curr', 3, '12V AUX Current', 1900),
            _sensor('power', 1, 'Board Power', 58250000)):
        sensors.update(part)
    sensors['temp1_max_hyst'] = 83000
    sensors['temp1_crit_hyst'] = 93000
    return sensors


def d5005_bmc_sensors():
    """Part of d5005bmc-hwmon's channels (it has no power channel)."""
    sensors = {}
    for part in (
            _sensor('temp', 1, 'Board Inlet Air Temperature', 28000, 65000,
                    75000),
            _sensor('temp', 2, 'FPGA Core Temperature', 61000, 90000,
                    100000),
            _sensor('temp', 3, 'Board Exhaust Air Temperature', 40500,
                    80000, 90000),
            _sensor('in', 3, '3.3v Voltage', 3301, 3465, 3630),
            _sensor('curr', 1, 'FPGA Core Current', 30500)):
        sensors.update(part)
    return sensors


def add_m10_bmc(testbed, pf, sensors, bmc='n3000bmc'):
    """The BMC below the FME of the PAC at ``pf`` (a /sys/bus/pci path):
    the spi-altera DFL device, its SPI master and device, the
    <bmc>-hwmon MFD cell and its hwmon (named <bmc>_hwmon by the hwmon
    core). Returns the hwmon's sys path."""
    fme = real_sys_path(testbed, pf) + '/fpga_region/region0/dfl-fme.0'
    dfl_dev = add_device(testbed, fme + '/dfl_dev.1', 'dfl', {},
                         kind='bus', driver='spi-altera-dfl')
    master = add_device(testbed, dfl_dev + '/spi_master/spi0',
                        'spi_master', {})
    spi = add_device(testbed, master + '/spi0.0', 'spi',
                     {'modalias': 'spi:m10-%s' % bmc.replace('bmc', '')},
                     kind='bus', driver='intel-m10-bmc')
    cell = add_device(testbed, spi + '/%s-hwmon.1.auto' % bmc, 'platform',
                      {}, kind='bus', driver='intel-m10-bmc-hwmon')
    attributes = {'name': '%s_hwmon' % bmc}
    attributes.update(sensors)
    return add_device(testbed, cell + '/hwmon/hwmon3', 'hwmon', attributes)


# -- Xilinx Alveo: the XMC's sensors -----------------------------------------

def u250_xmc_sensors():
    """xmc_* attributes of a U250's XMC as xclmgmt shows them (degrees C,
    mV, mA, uW; xmc_max_power is the card's power level, 2 = 225 W)."""
    return {
        'xmc_fpga_temp': 38, 'xmc_fan_temp': 33, 'xmc_fan_rpm': 3850,
        'xmc_se98_temp0': 31, 'xmc_se98_temp1': 30, 'xmc_se98_temp2': 29,
        'xmc_cage_temp0': 27, 'xmc_cage_temp1': 0,
        'xmc_vccint_temp': 36,
        'xmc_12v_pex_vol': 12134, 'xmc_12v_pex_curr': 2281,
        'xmc_12v_aux_vol': 12070, 'xmc_12v_aux_curr': 1410,
        'xmc_3v3_pex_vol': 3310, 'xmc_3v3_aux_vol': 3306,
        'xmc_vccint_vol': 851, 'xmc_vccint_curr': 9280,
        'xmc_power': 45108000, 'xmc_power_warn': 0, 'xmc_max_power': 2,
    }


def set_xmc(testbed, mgmt, values):
    """Write xmc_* values into the XMC subdevice of the management PF at
    ``mgmt`` (a /sys/bus/pci path)."""
    [xmc] = [name for name in os.listdir(testbed.path(mgmt))
             if name.startswith('xmc.m.')]
    for name, value in values.items():
        testbed.write('%s/%s/%s' % (mgmt, xmc, name), '%s\n' % value)
