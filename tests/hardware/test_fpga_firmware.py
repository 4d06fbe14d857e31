"""Flashing card firmware with the FPGA drivers, against the umockdev
testbeds and the fake fpgasupdate and xbmgmt of tests/hardware/fake_tools,
on images built in their real formats (tests/images.py)."""

import json
import uuid

import pytest

from cyborg_like.common import exception
from cyborg_like.drivers.fpga import intel
from cyborg_like.drivers.fpga import xilinx
from cyborg_like.drivers import pci
from tests import images

# testbeds/intel_pac_n3000.umockdev
N3000 = '0000:60:00.0'
N3000_INTERFACE = '07c3d528-e581-4986-9a14-9917eb8c6a66'
NEW_INTERFACE = '5e2a8a63-1dfe-4f33-9c54-6c1d4f3c2b7a'
# testbeds/xilinx_alveo_u250.umockdev
U250 = '0000:3b:00.0'
U250_INTERFACE = '3fbc8296-873b-4f3b-8fac-272bf18b2899'
NEW_SHELL_INTERFACE = '15a3f4a8-1c6e-4b8c-9b0f-6f1a2b3c4d5e'


def region_interfaces(device):
    return sorted(v for d in device.deployables
                  for k, v in d.attributes.items()
                  if v.startswith('CUSTOM_FPGA_INTERFACE_'))


# -- Intel: fpgasupdate ------------------------------------------------------

@pytest.fixture
def n3000(testbed, fake_tools):
    testbed('intel_pac_n3000')
    return fake_tools


@pytest.fixture
def intel_driver(conf):
    return intel.IntelFPGADriver(conf)


def fim_image(bitstreams, name='fim.bin', signed=True, **described):
    payload = json.dumps(described).encode()
    data = images.signed(payload, images.SIGNED_FIM) if signed else payload
    return bitstreams.write(name, data)


def test_fim_update_changes_the_pr_interface(n3000, intel_driver,
                                             bitstreams):
    cpid = pci.controlpath_id(N3000)
    before = intel_driver.firmware_versions(cpid)
    assert before['pr_interface_ids'] == [N3000_INTERFACE]
    path = fim_image(bitstreams, bitstream_id='0x23000410020409',
                     pr_interface_id=NEW_INTERFACE)

    intel_driver.flash_firmware(cpid, path)

    assert n3000.calls('fpgasupdate') == [[path, N3000]]
    after = intel_driver.firmware_versions(cpid)
    assert (after['bitstream_id'], after['pr_interface_ids']) == (
        '0x23000410020409', [NEW_INTERFACE])
    [device] = intel_driver.discover()
    assert region_interfaces(device) == [
        'CUSTOM_FPGA_INTERFACE_' + NEW_INTERFACE.replace('-', '').upper()]


def test_bmc_image_is_accepted_and_leaves_the_fim(n3000, intel_driver,
                                                  bitstreams):
    cpid = pci.controlpath_id(N3000)
    before = intel_driver.firmware_versions(cpid)
    path = bitstreams.write('bmc.bin', images.signed(b'\x01' * 4096,
                                                     images.SIGNED_BMC))
    intel_driver.flash_firmware(cpid, path)
    assert intel_driver.firmware_versions(cpid) == before


def test_an_unsigned_image_is_refused_by_the_card(n3000, intel_driver,
                                                  bitstreams):
    path = fim_image(bitstreams, signed=False,
                     pr_interface_id=NEW_INTERFACE)
    with pytest.raises(exception.DriverError, match='not a signed image'):
        intel_driver.flash_firmware(pci.controlpath_id(N3000), path)
    assert intel_driver.firmware_versions(pci.controlpath_id(N3000))[
        'pr_interface_ids'] == [N3000_INTERFACE]


def test_a_root_key_image_is_not_confirmed_unattended(n3000, intel_driver,
                                                      bitstreams):
    # Root entry hash programming cannot be undone: fpgasupdate asks, and
    # the driver never answers for the operator.
    path = bitstreams.write('rk.bin', images.signed(b'\0' * 64, 0x0200))
    with pytest.raises(exception.DriverError, match='canceled'):
        intel_driver.flash_firmware(pci.controlpath_id(N3000), path)
    [argv] = n3000.calls('fpgasupdate')
    assert '-y' not in argv and '--yes' not in argv


def test_a_failed_flash_reports_the_tools_message(n3000, intel_driver,
                                                  bitstreams):
    n3000.fail('fpgasupdate')
    path = fim_image(bitstreams, pr_interface_id=NEW_INTERFACE)
    with pytest.raises(exception.DriverError, match='Secure update failed'):
        intel_driver.flash_firmware(pci.controlpath_id(N3000), path)


def test_an_image_not_matching_its_checksum_is_not_flashed(
        n3000, intel_driver, bitstreams):
    path = fim_image(bitstreams, pr_interface_id=NEW_INTERFACE)
    with open(path, 'ab') as f:
        f.write(b'tampered')
    with pytest.raises(exception.DriverError, match='sha256 mismatch'):
        intel_driver.flash_firmware(pci.controlpath_id(N3000), path)
    assert n3000.calls('fpgasupdate') == []


# -- Xilinx: xbmgmt program --base -------------------------------------------

@pytest.fixture
def u250(testbed, fake_tools):
    testbed('xilinx_alveo_u250')
    return fake_tools


@pytest.fixture
def xilinx_driver(conf):
    return xilinx.XilinxFPGADriver(conf)


def base_image(bitstreams, vbnv='xilinx_u250_gen3x16_base_4',
               interfaces=(NEW_SHELL_INTERFACE,), flash=True):
    sections = [(images.PARTITION_METADATA, 'partition_metadata',
                 images.partition_metadata(*interfaces))]
    if flash:
        sections.append((images.MCS, 'mcs', b'\xff' * 512))
    data = images.xclbin(None, str(uuid.uuid4()), vbnv=vbnv,
                         sections=sections)
    return bitstreams.write('base.xsabin', data)


def test_base_flash_changes_the_shell_interface(u250, xilinx_driver,
                                                bitstreams):
    cpid = pci.controlpath_id(U250)
    assert xilinx_driver.firmware_versions(cpid)['interface_uuids'] == [
        U250_INTERFACE]
    path = base_image(bitstreams)

    xilinx_driver.flash_firmware(cpid, path)

    assert u250.calls('xbmgmt') == [
        ['program', '--base', '--device', U250, '--image', path]]
    after = xilinx_driver.firmware_versions(cpid)
    assert (after['vbnv'], after['interface_uuids']) == (
        'xilinx_u250_gen3x16_base_4', [NEW_SHELL_INTERFACE])
    [device] = xilinx_driver.discover()
    assert region_interfaces(device) == [
        'CUSTOM_FPGA_INTERFACE_' +
        NEW_SHELL_INTERFACE.replace('-', '').upper()]


def test_a_base_image_for_another_card_is_refused(u250, xilinx_driver,
                                                  bitstreams):
    path = base_image(bitstreams, vbnv='xilinx_u280_gen3x16_base_1')
    with pytest.raises(exception.DriverError, match='not for this card'):
        xilinx_driver.flash_firmware(pci.controlpath_id(U250), path)


def test_an_xclbin_is_not_a_base_image(u250, xilinx_driver, bitstreams):
    path = base_image(bitstreams, flash=False)
    with pytest.raises(exception.DriverError, match='no flash image'):
        xilinx_driver.flash_firmware(pci.controlpath_id(U250), path)


def test_a_failed_base_flash_keeps_the_shell(u250, xilinx_driver,
                                             bitstreams):
    u250.fail('xbmgmt')
    cpid = pci.controlpath_id(U250)
    with pytest.raises(exception.DriverError, match='flash write failed'):
        xilinx_driver.flash_firmware(cpid, base_image(bitstreams))
    assert xilinx_driver.firmware_versions(cpid)['interface_uuids'] == [
        U250_INTERFACE]
