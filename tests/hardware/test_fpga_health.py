"""FPGA health from what the cards expose: the PAC's MAX 10 BMC sensors
and FME error registers (umockdev sysfs), the Alveo's XRT examine report
(the fake xbutil of tests/hardware/fake_tools, fed by the testbed's XMC
values) beside its sysfs checks."""

import json
import os
import subprocess

import pytest

from cyborg_like.drivers.fpga import intel
from cyborg_like.drivers.fpga import xilinx
from tests.hardware import fpga_cards

PF_SYS = '/sys/bus/pci/devices/0000:60:00.0'
FME = PF_SYS + '/fpga_region/region0/dfl-fme.0'
MGMT = '0000:3b:00.0'
MGMT_SYS = '/sys/bus/pci/devices/' + MGMT
USER_SYS = '/sys/bus/pci/devices/0000:3b:00.1'

N3000_TEMPERATURES = {
    'Board Temperature': 36.0, 'FPGA Die Temperature': 52.5,
    'QSFP0 Temperature': 31.0, 'Retimer A Temperature': 48.0,
    'Retimer A SerDes Temperature': 49.5, 'Retimer B Temperature': 47.5,
    'Retimer B SerDes Temperature': 49.0}


# -- Intel PAC ---------------------------------------------------------------

@pytest.fixture
def n3000(testbed):
    bed = testbed('intel_pac_n3000')
    bed.bmc = fpga_cards.add_m10_bmc(bed, PF_SYS,
                                     fpga_cards.n3000_bmc_sensors())
    return bed


@pytest.fixture
def pac(conf):
    return intel.IntelFPGADriver(conf)


def test_a_normal_n3000_is_healthy_with_its_bmc_sensors(n3000, pac):
    [health] = pac.health()

    assert (health.healthy, health.reasons, health.unchecked) == (
        True, [], [])
    assert health.utilization == {
        'temperature_c': 52.5, 'board_power_w': 58.25,
        'temperatures_c': N3000_TEMPERATURES}


def test_a_sensor_at_its_critical_threshold_makes_the_card_unhealthy(
        n3000, pac):
    n3000.write(n3000.bmc + '/temp2_input', '100000\n')

    [health] = pac.health()

    assert not health.healthy
    assert health.reasons == [
        'BMC sensor FPGA Die Temperature reads 100 °C, at or above its '
        'critical threshold 100 °C']
    assert health.utilization['temperature_c'] == 100.0


def test_a_sensor_above_its_maximum_is_a_warning_only(n3000, pac):
    n3000.write(n3000.bmc + '/temp3_input', '82500\n')

    [health] = pac.health()

    assert (health.healthy, health.reasons) == (True, [])
    assert health.utilization['warnings'] == [
        'BMC sensor QSFP0 Temperature reads 82.5 °C, above its maximum '
        '80 °C']


def test_the_fmes_own_thermal_limits_count_too(n3000, pac):
    n3000.write(FME + '/hwmon/hwmon2/temp1_input', '101000\n')
    [health] = pac.health()
    assert health.reasons == [
        'dfl-fme.0 sensor dfl_fme_thermal temp1 reads 101 °C, at or above '
        'its critical threshold 100 °C']


def test_a_catastrophic_error_makes_the_card_unhealthy(n3000, pac):
    n3000.write(FME + '/errors/catfatal_errors', '0x10\n')
    [health] = pac.health()
    assert not health.healthy
    assert health.reasons == ['dfl-fme.0 errors/catfatal_errors = 0x10']


def test_injected_errors_are_a_warning(n3000, pac):
    n3000.write(FME + '/errors/inject_errors', '0x1\n')
    [health] = pac.health()
    assert health.healthy
    assert health.utilization['warnings'] == [
        'dfl-fme.0 errors/inject_errors = 0x1: errors are being injected']


def test_without_the_bmc_driver_the_sensors_are_unchecked(testbed, pac):
    testbed('intel_pac_n3000')

    [health] = pac.health()

    assert health.healthy
    # The FME's own thermal sensor still gives the FPGA's temperature.
    assert health.utilization == {'temperature_c': 41.0}
    assert health.unchecked == [
        'BMC sensors: no n3000bmc_hwmon or d5005bmc_hwmon hwmon below '
        '0000:60:00.0 (intel-m10-bmc-hwmon not loaded, or a card without '
        'a MAX 10 BMC)']


def test_a_d5005s_labels_are_understood(testbed, pac):
    bed = testbed('intel_pac_n3000')
    bed.write(PF_SYS + '/device', '0x0b2b\n')
    bmc = fpga_cards.add_m10_bmc(bed, PF_SYS, fpga_cards.d5005_bmc_sensors(),
                                 bmc='d5005bmc')
    bed.write(bmc + '/in3_input', '3500\n')

    [health] = pac.health()

    assert health.healthy
    assert health.utilization == {
        'temperature_c': 61.0,
        'temperatures_c': {'Board Inlet Air Temperature': 28.0,
                           'FPGA Core Temperature': 61.0,
                           'Board Exhaust Air Temperature': 40.5},
        'warnings': ['BMC sensor 3.3v Voltage reads 3.5 V, above its '
                     'maximum 3.465 V']}


# -- Xilinx Alveo ------------------------------------------------------------

@pytest.fixture
def u250(testbed):
    bed = testbed('xilinx_alveo_u250')
    fpga_cards.set_xmc(bed, MGMT_SYS, fpga_cards.u250_xmc_sensors())
    return bed


@pytest.fixture
def alveo(conf):
    return xilinx.XilinxFPGADriver(conf)


def test_a_normal_u250_is_healthy_with_its_xrt_report(u250, alveo,
                                                      fake_tools):
    [health] = alveo.health()

    assert (health.healthy, health.reasons, health.unchecked) == (
        True, [], [])
    assert fake_tools.calls('xbutil') == [[
        'examine', '--device', '0000:3b:00.1', '--report', 'electrical',
        'thermal', 'mechanical', '--format', 'JSON', '--output',
        fake_tools.calls('xbutil')[0][-1]]]
    assert health.utilization == {
        'temperature_c': 38.0,
        'board_power_w': 45.108, 'board_power_max_w': 225.0,
        'temperatures_c': {'PCB Top Front': 31.0, 'PCB Top Rear': 30.0,
                           'PCB Bottom Front': 29.0, 'Cage0': 27.0,
                           'FPGA': 38.0, 'Int Vcc': 36.0},
        'fans_rpm': {'FPGA Fan 1': 3850},
        'power_rails': {
            '12v_aux': {'volts': 12.07, 'amps': 1.41},
            '12v_pex': {'volts': 12.134, 'amps': 2.281},
            '3v3_pex': {'volts': 3.31},
            '3v3_aux': {'volts': 3.306},
            'vccint': {'volts': 0.851, 'amps': 9.28}}}


def test_an_over_temperature_in_the_report_makes_the_card_unhealthy(
        u250, alveo, fake_tools):
    fpga_cards.set_xmc(u250, MGMT_SYS, {'xmc_se98_temp0': 97})

    [health] = alveo.health()

    assert not health.healthy
    assert health.reasons == [
        'XRT thermal PCB Top Front reads 97 °C, at or above the critical '
        '95 °C ([xilinx_fpga] critical_temperature_c)']


def test_power_over_the_cards_maximum_makes_it_unhealthy(u250, alveo,
                                                         fake_tools):
    # A 75 W card (power level 0) drawing 80.5 W, its XMC warning.
    fpga_cards.set_xmc(u250, MGMT_SYS, {'xmc_max_power': 0,
                                        'xmc_power': 80500000,
                                        'xmc_power_warn': 1})
    [health] = alveo.health()
    assert health.reasons == [
        'XRT board power reads 80.5 W, above the card\'s maximum 75 W']
    assert health.utilization['warnings'] == [
        'XRT reports a power warning on the card']


def test_a_failing_examine_is_unchecked_not_unhealthy(u250, alveo,
                                                      fake_tools):
    fake_tools.fail('xbutil')

    [health] = alveo.health()

    assert (health.healthy, health.reasons) == (True, [])
    [unchecked] = health.unchecked
    assert unchecked.startswith('XRT sensors (xbutil examine): ')
    assert 'ERROR: Unable to obtain the device' in unchecked
    # The sysfs reading stays.
    assert health.utilization == {'temperature_c': 38.0}


def test_a_hanging_examine_is_cut_short(u250, conf, fake_tools, monkeypatch):
    monkeypatch.setenv('FAKE_XBUTIL_SLEEP', '5')
    conf.set_override('examine_timeout', 1, group='xilinx_fpga')

    [health] = xilinx.XilinxFPGADriver(conf).health()

    assert health.healthy
    assert health.unchecked == [
        'XRT sensors (xbutil examine): xbutil did not finish within 1 s']


def test_a_missing_xbutil_is_unchecked(u250, alveo, monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    [health] = alveo.health()
    assert health.healthy
    assert health.unchecked == [
        'XRT sensors (xbutil examine): xbutil was not found on PATH; '
        'install it or set [xilinx_fpga] xbutil_path']


def test_a_passed_through_user_function_is_not_examined(u250, alveo,
                                                        fake_tools):
    u250.set_driver(USER_SYS, 'vfio-pci')

    [health] = alveo.health()

    assert fake_tools.calls('xbutil') == []
    assert health.unchecked == [
        'XRT sensors (xbutil examine): the user function 0000:3b:00.1 is '
        'not on xocl (driver: vfio-pci), xbutil cannot reach it']


def test_the_report_is_cached_for_the_configured_time(
        u250, conf, fake_tools, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(xilinx.time, 'monotonic', lambda: clock[0])
    conf.set_override('examine_cache_seconds', 30, group='xilinx_fpga')
    driver = xilinx.XilinxFPGADriver(conf)

    driver.health()
    fpga_cards.set_xmc(u250, MGMT_SYS, {'xmc_se98_temp0': 97})
    clock[0] += 29
    [cached] = driver.health()

    assert len(fake_tools.calls('xbutil')) == 1
    assert cached.healthy

    clock[0] += 2
    [fresh] = driver.health()
    assert len(fake_tools.calls('xbutil')) == 2
    assert not fresh.healthy


def test_a_failure_is_cached_too(u250, alveo, fake_tools):
    fake_tools.fail('xbutil')
    alveo.health()
    [health] = alveo.health()
    assert len(fake_tools.calls('xbutil')) == 1
    assert len(health.unchecked) == 1


def test_the_data_driven_report_shape_is_read(u250, alveo):
    # XRT's sensor.cpp for cards with a data-driven sensor table: values
    # under voltage/current with their recorded max, no max power.
    device = {'device_id': '0000:3b:00.1',
              'electrical': {
                  'power_rails': [
                      {'id': '12v_pex', 'description': '12v_pex',
                       'voltage': {'volts': '12.100', 'max': '12.250',
                                   'average': '12.110',
                                   'is_present': 'true'},
                       'current': {'amps': '2.000', 'max': '3.100',
                                   'average': '2.050',
                                   'is_present': 'true'}}],
                  'power_consumption_watts': '40',
                  'power_consumption_max_watts': 'NA',
                  'power_consumption_warning': 'NA'},
              'thermals': [{'location_id': 'fpga0', 'description': 'FPGA',
                            'temp_C': '55', 'is_present': 'true'}],
              'mechanical': {'fans': [{'location_id': 'fan', 'description':
                                       'Fan', 'speed_rpm': '0',
                                       'critical_trigger_temp_C': 'N/A',
                                       'is_present': 'true'}]}}
    found = xilinx.read_examine(json.loads(json.dumps(device)), 95)
    assert found.utilization == {
        'board_power_w': 40.0, 'temperatures_c': {'FPGA': 55.0},
        'fans_rpm': {'Fan': 0},
        'power_rails': {'12v_pex': {'volts': 12.1, 'max_volts': 12.25,
                                    'amps': 2.0, 'max_amps': 3.1}}}
    assert found.reasons == []


def test_the_fake_xbutil_refuses_an_existing_output_file(u250, alveo,
                                                         fake_tools,
                                                         tmp_path):
    # As XRT does without --force: the driver always writes a new file.
    existing = tmp_path / 'report.json'
    existing.write_text('{}')
    result = subprocess.run(
        ['xbutil', 'examine', '--device', '0000:3b:00.1', '--report',
         'thermal', '--format', 'JSON', '--output', str(existing)],
        capture_output=True, text=True, env=dict(os.environ))
    assert result.returncode != 0
    assert 'already exists' in result.stderr
