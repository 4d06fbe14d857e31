"""The xilinx_fpga driver against a umockdev testbed of an Alveo U250 and
the fake xbmgmt of tests/hardware/fake_tools."""

import pytest
import stevedore

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base
from cyborg_like.drivers.fpga import xilinx
from cyborg_like.drivers import pci
from tests.hardware import fpga_cards

MGMT = '0000:3b:00.0'
USER = '0000:3b:00.1'
CPID = pci.controlpath_id(MGMT)
MGMT_SYS = '/sys/bus/pci/devices/' + MGMT
USER_SYS = '/sys/bus/pci/devices/' + USER
FIREWALL = MGMT_SYS + '/firewall.m.1024'
# Values of testbeds/xilinx_alveo_u250.umockdev.
INTERFACE_UUID = '3fbc8296-873b-4f3b-8fac-272bf18b2899'
LOGIC_UUID = '9a898c8f-cf2f-47e1-ad24-ccbe99997501'
XCLBIN_UUID = '3b42de75-8342-4936-a653-0c9ec19ddcb1'
BLANK_UUID = 'cadf01ed-f9ee-400d-b801-a92aec80f11e'


@pytest.fixture
def u250(testbed):
    return testbed('xilinx_alveo_u250')


@pytest.fixture
def driver(conf):
    return xilinx.XilinxFPGADriver(conf)


@pytest.fixture
def xclbin(bitstreams):
    return bitstreams.xclbin('vadd.xclbin', INTERFACE_UUID, XCLBIN_UUID)


def xbmgmt_argv(path):
    return ['program', '--device', MGMT, '--user', path]


# -- discovery ---------------------------------------------------------------

def test_loads_through_its_entry_point(conf):
    manager = stevedore.driver.DriverManager(
        base.NAMESPACE, 'xilinx_fpga', invoke_on_load=True,
        invoke_args=(conf,))
    assert isinstance(manager.driver, xilinx.XilinxFPGADriver)


def test_discovers_the_u250_as_one_device_with_its_user_partition(
        u250, driver):
    [device] = driver.discover()

    assert (device.type, device.vendor, device.model) == (
        'FPGA', '0x10ee', 'Alveo U250')
    # Named by its management PF; the user PF is what instances get.
    assert device.controlpath_id == CPID
    assert device.std_board_info == {
        'device_id': '0x5004', 'class': '0x120000', 'numa_node': '0'}
    assert device.vendor_board_info == {
        'vbnv': 'xilinx_u250_gen3x16_xdma_shell_3_1',
        'logic_uuid': LOGIC_UUID, 'interface_uuids': [INTERFACE_UUID],
        'user_function': USER}
    [region] = device.deployables
    assert region.name == 'region0'
    assert region.attributes == {
        'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_XILINX',
        'trait1': 'CUSTOM_FPGA_XILINX_ALVEO_U250',
        'trait2': 'CUSTOM_PROGRAMMABLE',
        'trait3': 'CUSTOM_FPGA_INTERFACE_3FBC8296873B4F3B8FAC272BF18B2899'}
    assert [h.attach_info for h in region.attach_handles] == [
        inventory.pci_address_info(USER)]
    assert region.bitstream_id is None      # xclbinuuid is all zeros
    inventory.validate('host', [device.to_dict()])


def test_without_a_shell_the_card_has_no_region(u250, driver):
    u250.write(MGMT_SYS + '/interface_uuids', '')
    [device] = driver.discover()
    assert device.deployables == []


def test_other_devices_are_ignored(testbed, driver):
    testbed('intel_pac_n3000')
    assert driver.discover() == []


# -- programming -------------------------------------------------------------

def test_programs_through_xbmgmt_and_reads_the_uuid_back(
        u250, driver, fake_tools, xclbin):
    driver.program(CPID, 'region0', xclbin, XCLBIN_UUID)

    assert fake_tools.calls('xbmgmt') == [xbmgmt_argv(xclbin)]
    assert u250.read(USER_SYS + '/xclbinuuid') == XCLBIN_UUID + '\n'
    assert fpga_cards.only_region(driver).bitstream_id == XCLBIN_UUID


def test_a_passed_through_user_function_reports_the_recorded_id(
        u250, driver, fake_tools, xclbin):
    # Handed to a VM: vfio-pci instead of xocl, no xclbinuuid to read.
    u250.set_driver(USER_SYS, 'vfio-pci')
    u250.remove(USER_SYS + '/xclbinuuid')

    driver.program(CPID, 'region0', xclbin, XCLBIN_UUID)

    assert fake_tools.calls() == [xbmgmt_argv(xclbin)]
    assert fpga_cards.only_region(driver).bitstream_id == XCLBIN_UUID


def test_a_sha256_mismatch_is_refused_before_the_tool_runs(
        u250, driver, fake_tools, xclbin):
    with open(xclbin + '.sha256', 'w') as f:
        f.write('%s  vadd.xclbin\n' % ('ab' * 32))

    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', xclbin, XCLBIN_UUID)

    assert 'expected %s' % ('ab' * 32) in str(error.value)
    assert fake_tools.calls() == []


def test_a_malformed_checksum_file_is_refused(u250, driver, fake_tools,
                                              xclbin):
    with open(xclbin + '.sha256', 'w') as f:
        f.write('not-a-digest\n')
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', xclbin, XCLBIN_UUID)
    assert "'not-a-digest' is not a sha256 digest" in str(error.value)
    assert fake_tools.calls() == []


def test_a_tool_failure_carries_the_tools_message(u250, driver, fake_tools,
                                                  xclbin):
    fake_tools.fail('xbmgmt')

    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', xclbin, XCLBIN_UUID)

    assert ('ERROR: Failed to download xclbin to device [0000:3b:00.0]: '
            'Connection timed out') in str(error.value)
    assert fpga_cards.only_region(driver).bitstream_id is None


def test_a_file_that_is_no_xclbin_is_rejected_by_the_tool(
        u250, driver, fake_tools, bitstreams):
    path = bitstreams.xclbin('old.xclbin', INTERFACE_UUID, XCLBIN_UUID,
                             magic=b'xclbin0\0')
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', path, XCLBIN_UUID)
    assert "bad magic, expected 'xclbin2'" in str(error.value)


def test_an_xclbin_for_another_shell_is_rejected_by_the_tool(
        u250, driver, fake_tools, bitstreams):
    path = bitstreams.xclbin('other.xclbin', BLANK_UUID, XCLBIN_UUID)
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', path, XCLBIN_UUID)
    assert 'does not match the shell on device [0000:3b:00.0]' in str(
        error.value)


def test_a_missing_tool_is_a_clear_error(u250, driver, xclbin, monkeypatch,
                                         tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', xclbin, XCLBIN_UUID)
    assert ('xbmgmt was not found on PATH; install it or set '
            '[xilinx_fpga] xbmgmt_path') in str(error.value)


def test_the_user_function_is_not_a_card(u250, driver, fake_tools, xclbin):
    with pytest.raises(exception.DriverError) as error:
        driver.program(pci.controlpath_id(USER), 'region0', xclbin,
                       XCLBIN_UUID)
    assert 'no card of this driver at 0000:3b:00.1' in str(error.value)


# -- release -----------------------------------------------------------------

def test_release_erases_the_user_partition_when_configured(
        u250, conf, fake_tools, bitstreams, xclbin):
    blank = bitstreams.xclbin('blank.xclbin', INTERFACE_UUID, BLANK_UUID)
    conf.set_override('erase_on_release', True, group='xilinx_fpga')
    conf.set_override('erase_bitstream', blank, group='xilinx_fpga')
    driver = xilinx.XilinxFPGADriver(conf)
    driver.program(CPID, 'region0', xclbin, XCLBIN_UUID)
    handle = base.AttachHandle('PCI', inventory.pci_address_info(USER))

    driver.release_attach_handle(CPID, handle)

    assert fake_tools.calls()[-1] == xbmgmt_argv(blank)
    assert fpga_cards.only_region(driver).bitstream_id == BLANK_UUID


def test_erase_on_release_needs_an_erase_bitstream(u250, conf, fake_tools):
    conf.set_override('erase_on_release', True, group='xilinx_fpga')
    handle = base.AttachHandle('PCI', inventory.pci_address_info(USER))
    with pytest.raises(exception.DriverError) as error:
        xilinx.XilinxFPGADriver(conf).release_attach_handle(CPID, handle)
    assert 'erase_bitstream is not' in str(error.value)
    assert fake_tools.calls() == []


# -- health ------------------------------------------------------------------

def test_a_healthy_card_reports_its_temperature(u250, driver):
    [health] = driver.health()
    assert health.controlpath_id == CPID
    assert (health.healthy, health.reasons) == (True, [])
    assert health.utilization == {'temperature_c': 38.0}


def test_a_tripped_firewall_makes_the_card_unhealthy(u250, driver):
    u250.write(FIREWALL + '/detected_status', '0x80000\n')
    u250.write(FIREWALL + '/detected_level', '1\n')

    [health] = driver.health()

    assert not health.healthy
    assert health.reasons == [
        'AXI firewall firewall.m.1024 tripped (status 0x80000, level 1)']


def test_missing_drivers_make_the_card_unhealthy(u250, driver):
    u250.set_driver(MGMT_SYS, None)
    u250.set_driver(USER_SYS, None)
    u250.write(MGMT_SYS + '/ready', '0x0\n')

    [health] = driver.health()

    assert health.reasons == [
        '0000:3b:00.0 is not bound to xclmgmt (driver: none)',
        'user function 0000:3b:00.1 has no driver',
        'the shell on 0000:3b:00.0 is not ready']
