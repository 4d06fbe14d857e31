"""The intel_fpga driver against umockdev testbeds of a PAC N3000 and the
fake fpgaconf of tests/hardware/fake_tools."""

import os
import shutil

import pytest
import stevedore

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base
from cyborg_like.drivers.fpga import bitstream
from cyborg_like.drivers.fpga import intel
from cyborg_like.drivers import pci
from tests.hardware import fpga_cards

PF = '0000:60:00.0'
VF = '0000:60:00.1'
CPID = pci.controlpath_id(PF)
PF_SYS = '/sys/bus/pci/devices/' + PF
FME = PF_SYS + '/fpga_region/region0/dfl-fme.0'
PORT = PF_SYS + '/fpga_region/region0/dfl-port.0'
# Values of testbeds/intel_pac_n3000*.umockdev.
INTERFACE_ID = '07c3d528-e581-4986-9a14-9917eb8c6a66'
FACTORY_AFU = '62f5b01c-38fc-4fa6-934c-c868ad2c1cbe'
NEW_AFU = 'cdb5b81b-84e9-41ce-8ea1-6f29f4be9700'
BLANK_AFU = '0be5f7ec-a5f1-4135-a218-61470c95dec5'


@pytest.fixture
def n3000(testbed):
    return testbed('intel_pac_n3000')


@pytest.fixture
def driver(conf):
    return intel.IntelFPGADriver(conf)


@pytest.fixture
def gbs(bitstreams):
    return bitstreams.gbs('nlb.gbs', INTERFACE_ID, NEW_AFU)


def handles(deployable):
    return [pci.address_of({'cpid_info': h.attach_info})
            for h in deployable.attach_handles]


def fpgaconf_argv(path, *extra):
    return ['--segment', '0x0000', '-B', '0x60', '-D', '0x00', '-F', '0x0',
            *extra, path]


# -- discovery ---------------------------------------------------------------

def test_loads_through_its_entry_point(conf):
    manager = stevedore.driver.DriverManager(
        base.NAMESPACE, 'intel_fpga', invoke_on_load=True,
        invoke_args=(conf,))
    assert isinstance(manager.driver, intel.IntelFPGADriver)


def test_discovers_the_n3000_with_its_pr_region(n3000, driver):
    [device] = driver.discover()

    assert (device.type, device.vendor, device.model) == (
        'FPGA', '0x8086', 'PAC N3000')
    assert device.controlpath_id == CPID
    assert device.std_board_info == {
        'device_id': '0x0b30', 'class': '0x120000', 'numa_node': '0',
        'sriov_totalvfs': '1', 'sriov_numvfs': '0'}
    assert device.vendor_board_info == {
        'fme': 'dfl-fme.0', 'bitstream_id': '0x23000410010309',
        'ports_num': '1', 'pr_interface_ids': [INTERFACE_ID]}
    [region] = device.deployables
    assert region.name == 'region0'
    assert region.driver_name == 'intel_fpga'
    assert region.num_accelerators == 1
    assert region.attributes == {
        'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
        'trait1': 'CUSTOM_FPGA_INTEL_PAC_N3000',
        'trait2': 'CUSTOM_PROGRAMMABLE',
        'trait3': 'CUSTOM_FPGA_INTERFACE_07C3D528E58149869A149917EB8C6A66'}
    # SR-IOV off: the port is on the PF, which is the handle.
    assert handles(region) == [PF]
    assert region.bitstream_id == FACTORY_AFU
    inventory.validate('host', [device.to_dict()])


def test_with_sriov_the_vf_is_the_handle(testbed, driver):
    testbed('intel_pac_n3000_sriov')
    region = fpga_cards.only_region(driver)

    assert handles(region) == [VF]
    # The port is inside a VF bound to vfio-pci: nothing to read back, and
    # nothing was programmed through this driver yet.
    assert region.bitstream_id is None


def test_the_older_pr_interface_id_file_is_understood(n3000, driver):
    # An FME without PR region devices, as OPAE's out-of-tree driver had.
    shutil.rmtree(n3000.path(FME + '/dfl-fme-region.0'))
    os.makedirs(n3000.path(FME + '/pr'))
    n3000.write(FME + '/pr/interface_id', '0c97f4b0e1a24b8e8a8b9c8d7e6f5a4b\n')

    assert fpga_cards.only_region(driver).attributes['trait3'] == (
        'CUSTOM_FPGA_INTERFACE_0C97F4B0E1A24B8E8A8B9C8D7E6F5A4B')


def test_an_unbound_card_is_reported_without_regions(n3000, driver):
    n3000.set_driver(PF_SYS, None)
    [device] = driver.discover()
    assert device.deployables == []
    [health] = driver.health()
    assert health.reasons == [
        '0000:60:00.0 is not bound to dfl-pci (driver: none)']


def test_other_devices_are_ignored(testbed, driver):
    testbed('nic_x710_sriov')
    assert driver.discover() == []


# -- programming -------------------------------------------------------------

def test_programs_through_fpgaconf_and_reads_the_afu_back(
        n3000, driver, fake_tools, gbs):
    driver.program(CPID, 'region0', gbs, NEW_AFU)

    assert fake_tools.calls('fpgaconf') == [fpgaconf_argv(gbs)]
    assert n3000.read(PORT + '/afu_id') == NEW_AFU.replace('-', '') + '\n'
    assert fpga_cards.only_region(driver).bitstream_id == NEW_AFU


def test_with_sriov_the_programmed_id_is_recorded(
        testbed, driver, fake_tools, gbs):
    testbed('intel_pac_n3000_sriov')
    driver.program(CPID, 'region0', gbs, NEW_AFU)

    # fpgaconf cannot open a port living in a VF: --force.
    assert fake_tools.calls() == [fpgaconf_argv(gbs, '--force')]
    assert fpga_cards.only_region(driver).bitstream_id == NEW_AFU


def test_a_sha256_mismatch_is_refused_before_the_tool_runs(
        n3000, driver, fake_tools, bitstreams, gbs):
    with open(gbs, 'ab') as f:
        f.write(b'tampered')

    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', gbs, NEW_AFU)

    assert 'sha256 mismatch for bitstream %s' % gbs in str(error.value)
    assert fake_tools.calls() == []
    assert fpga_cards.only_region(driver).bitstream_id == FACTORY_AFU


def test_an_unknown_checksum_is_refused_unless_allowed(
        n3000, conf, fake_tools, bitstreams):
    path = bitstreams.gbs('unsigned.gbs', INTERFACE_ID, NEW_AFU,
                          checksum=False)
    with pytest.raises(exception.DriverError) as error:
        intel.IntelFPGADriver(conf).program(CPID, 'region0', path, NEW_AFU)
    assert 'no sha256 known for bitstream' in str(error.value)
    assert fake_tools.calls() == []

    conf.set_override('require_bitstream_checksum', False,
                      group='intel_fpga')
    intel.IntelFPGADriver(conf).program(CPID, 'region0', path, NEW_AFU)
    assert len(fake_tools.calls()) == 1


def test_the_caller_may_give_the_digest(n3000, driver, fake_tools,
                                        bitstreams):
    path = bitstreams.gbs('nlb.gbs', INTERFACE_ID, NEW_AFU, checksum=False)
    with pytest.raises(exception.DriverError):
        driver.program(CPID, 'region0', path, NEW_AFU, sha256='0' * 64)
    assert fake_tools.calls() == []

    driver.program(CPID, 'region0', path, NEW_AFU,
                   sha256=bitstream.file_sha256(path).upper())
    assert fpga_cards.only_region(driver).bitstream_id == NEW_AFU


def test_a_tool_failure_carries_the_tools_message(n3000, driver, fake_tools,
                                                  gbs):
    fake_tools.fail('fpgaconf')

    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', gbs, NEW_AFU)

    assert 'Error writing bitstream to FPGA: reconfiguration error' in str(
        error.value)
    assert str(error.value).startswith('Driver intel_fpga failed: ')
    assert fpga_cards.only_region(driver).bitstream_id == FACTORY_AFU


def test_a_gbs_for_another_pr_interface_finds_no_slot(
        n3000, driver, fake_tools, bitstreams):
    path = bitstreams.gbs('other.gbs', BLANK_AFU, NEW_AFU)
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', path, NEW_AFU)
    assert 'No suitable slots found.' in str(error.value)


def test_a_file_that_is_no_gbs_is_rejected_by_the_tool(
        n3000, driver, fake_tools, bitstreams):
    path = bitstreams.write('random.gbs', b'\x7fELF' + b'\0' * 64)
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', path, NEW_AFU)
    assert 'GBS guid is invalid' in str(error.value)


def test_a_missing_tool_is_a_clear_error(n3000, driver, gbs, monkeypatch,
                                         tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', gbs, NEW_AFU)
    assert ('fpgaconf was not found on PATH; install it or set '
            '[intel_fpga] fpgaconf_path') in str(error.value)


def test_a_configured_tool_path_is_used(n3000, conf, fake_tools, gbs,
                                        monkeypatch, tmp_path):
    fpgaconf = os.path.join(os.path.dirname(__file__), 'fake_tools',
                            'fpgaconf')
    monkeypatch.setenv('PATH', os.defpath)
    conf.set_override('fpgaconf_path', fpgaconf, group='intel_fpga')
    intel.IntelFPGADriver(conf).program(CPID, 'region0', gbs, NEW_AFU)
    assert fake_tools.calls() == [fpgaconf_argv(gbs)]

    conf.set_override('fpgaconf_path', gbs, group='intel_fpga')
    with pytest.raises(exception.DriverError) as error:
        intel.IntelFPGADriver(conf).program(CPID, 'region0', gbs, NEW_AFU)
    assert 'is not an executable file' in str(error.value)


def test_a_bitstream_id_must_be_a_uuid(n3000, driver, fake_tools, gbs):
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', gbs, 'nlb-mode-0')
    assert "bitstream id 'nlb-mode-0' is not a UUID" in str(error.value)
    assert fake_tools.calls() == []


def test_the_read_back_must_match_the_expected_id(n3000, driver, fake_tools,
                                                  gbs):
    with pytest.raises(exception.DriverError) as error:
        driver.program(CPID, 'region0', gbs, BLANK_AFU)
    assert 'reports bitstream %s, not %s' % (NEW_AFU, BLANK_AFU) in str(
        error.value)


# Explicit ids: gabbi's pytest plugin takes any test id with a ':' (as in a
# PCI address) for one of its own.
@pytest.mark.parametrize('address, region, message', [
    ('0000:3b:00.0', 'region0', 'no card of this driver at 0000:3b:00.0'),
    (PF, 'region1', 'card 0000:60:00.0 has no region region1'),
], ids=['not-a-card', 'no-such-region'])
def test_an_unknown_target_is_refused(n3000, driver, fake_tools, gbs,
                                      address, region, message):
    with pytest.raises(exception.DriverError) as error:
        driver.program(pci.controlpath_id(address), region, gbs, NEW_AFU)
    assert message in str(error.value)
    assert fake_tools.calls() == []


# -- release -----------------------------------------------------------------

def test_release_erases_the_region_when_configured(
        n3000, conf, fake_tools, bitstreams, gbs):
    blank = bitstreams.gbs('blank.gbs', INTERFACE_ID, BLANK_AFU)
    handle = {'attach_type': 'PCI',
              'attach_info': inventory.pci_address_info(PF)}
    driver = intel.IntelFPGADriver(conf)
    driver.program(CPID, 'region0', gbs, NEW_AFU)

    assert driver.prepare_attach_handle(CPID, handle) == handle[
        'attach_info']
    driver.release_attach_handle(CPID, handle)
    # Erasing is not configured.
    assert fpga_cards.only_region(driver).bitstream_id == NEW_AFU

    conf.set_override('erase_on_release', True, group='intel_fpga')
    conf.set_override('erase_bitstream', blank, group='intel_fpga')
    intel.IntelFPGADriver(conf).release_attach_handle(CPID, handle)

    assert fake_tools.calls()[-1] == fpgaconf_argv(blank)
    assert fpga_cards.only_region(driver).bitstream_id == BLANK_AFU


# -- health ------------------------------------------------------------------

def test_a_healthy_card_reports_its_temperature(n3000, driver):
    [health] = driver.health()
    assert health.controlpath_id == CPID
    assert (health.healthy, health.reasons) == (True, [])
    assert health.utilization == {'temperature_c': 41.0}


def test_latched_errors_make_the_card_unhealthy(n3000, driver):
    n3000.write(FME + '/errors/catfatal_errors', '0x800\n')
    n3000.write(PORT + '/errors/errors', '0x2\n')

    [health] = driver.health()

    assert not health.healthy
    assert health.reasons == ['dfl-fme.0 errors/catfatal_errors = 0x800',
                              'dfl-port.0 errors = 0x2']


def test_a_card_without_its_driver_is_unhealthy(n3000, driver):
    n3000.set_driver(PF_SYS, 'vfio-pci')
    [health] = driver.health()
    assert not health.healthy
    assert health.reasons == [
        '0000:60:00.0 is not bound to dfl-pci (driver: vfio-pci)']
