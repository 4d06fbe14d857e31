"""The agent's firmware path with the real FPGA drivers: a catalog image
fetched over HTTP and verified, the card's firmware read, the fake vendor
tool run under the umockdev testbed, the card discovered again with its
new interface."""

import json
import os

import oslo_messaging as messaging
import pytest

from cyborg_like.common import context
from cyborg_like.common import exception
from cyborg_like.drivers.fpga import intel
from cyborg_like.drivers.fpga import xilinx
from cyborg_like.drivers import pci
from tests import images
from tests.hardware import test_catalog_agent as catalog_agent

N3000 = '0000:60:00.0'
N3000_INTERFACE = '07c3d528-e581-4986-9a14-9917eb8c6a66'
NEW_INTERFACE = '5e2a8a63-1dfe-4f33-9c54-6c1d4f3c2b7a'
U250 = '0000:3b:00.0'
NEW_SHELL = '15a3f4a8-1c6e-4b8c-9b0f-6f1a2b3c4d5e'
IMAGE = '8e0a3c4f-5b6d-4e7f-8a9b-0c1d2e3f4a5b'
ADMIN = context.get_admin_context()


@pytest.fixture
def server():
    server = catalog_agent.ImageServer()
    yield server
    server.stop()


def _job(driver, address, image):
    return {'driver_name': driver.name, 'device_uuid': 'x',
            'controlpath_id': pci.controlpath_id(address), 'image': image}


def _interfaces(driver):
    [device] = driver.discover()
    return sorted({v for d in device.deployables
                   for v in d.attributes.values()
                   if v.startswith('CUSTOM_FPGA_INTERFACE_')})


def test_n3000_fim_is_fetched_verified_flashed_and_rediscovered(
        testbed, fake_tools, conf, tmp_path, server):
    testbed('intel_pac_n3000')
    driver = intel.IntelFPGADriver(conf)
    agent = catalog_agent._agent(driver, tmp_path)
    data = images.signed(json.dumps({
        'bitstream_id': '0x23000410020409',
        'pr_interface_id': NEW_INTERFACE}).encode(), images.SIGNED_FIM)
    job = _job(driver, N3000, server.job_image(IMAGE, data))

    found = agent.flash_firmware(ADMIN, job)

    assert found['old']['pr_interface_ids'] == [N3000_INTERFACE]
    assert (found['new']['bitstream_id'],
            found['new']['pr_interface_ids']) == ('0x23000410020409',
                                                  [NEW_INTERFACE])
    assert fake_tools.calls('fpgasupdate') == [
        [os.path.join(agent.images.directory, IMAGE), N3000]]
    assert _interfaces(driver) == [
        'CUSTOM_FPGA_INTERFACE_' + NEW_INTERFACE.replace('-', '').upper()]


def test_a_corrupted_download_flashes_nothing(testbed, fake_tools, conf,
                                              tmp_path, server):
    testbed('intel_pac_n3000')
    driver = intel.IntelFPGADriver(conf)
    agent = catalog_agent._agent(driver, tmp_path)
    data = images.signed(b'{"pr_interface_id": "%s"}' %
                         NEW_INTERFACE.encode(), images.SIGNED_FIM)
    job = _job(driver, N3000, server.job_image(
        IMAGE, data, served=data[:-3] + b'xyz'))
    with pytest.raises(messaging.ExpectedException) as raised:
        agent.flash_firmware(ADMIN, job)
    assert isinstance(raised.value.exc_info[1], exception.DriverError)
    assert fake_tools.calls('fpgasupdate') == []
    assert driver.firmware_versions(pci.controlpath_id(N3000))[
        'pr_interface_ids'] == [N3000_INTERFACE]


def test_u250_base_is_flashed_and_its_shell_interface_changes(
        testbed, fake_tools, conf, tmp_path, server):
    testbed('xilinx_alveo_u250')
    driver = xilinx.XilinxFPGADriver(conf)
    agent = catalog_agent._agent(driver, tmp_path)
    data = images.xclbin(None, vbnv='xilinx_u250_gen3x16_base_4', sections=[
        (images.PARTITION_METADATA, 'partition_metadata',
         images.partition_metadata(NEW_SHELL)),
        (images.MCS, 'mcs', b'\xff' * 256)])
    job = _job(driver, U250, server.job_image(IMAGE, data))

    found = agent.flash_firmware(ADMIN, job)

    assert (found['old']['vbnv'], found['new']['vbnv']) == (
        'xilinx_u250_gen3x16_xdma_shell_3_1', 'xilinx_u250_gen3x16_base_4')
    assert found['new']['interface_uuids'] == [NEW_SHELL]
    assert _interfaces(driver) == [
        'CUSTOM_FPGA_INTERFACE_' + NEW_SHELL.replace('-', '').upper()]


def test_a_failing_tool_leaves_the_error_for_the_operation(
        testbed, fake_tools, conf, tmp_path, server):
    testbed('xilinx_alveo_u250')
    fake_tools.fail('xbmgmt')
    driver = xilinx.XilinxFPGADriver(conf)
    agent = catalog_agent._agent(driver, tmp_path)
    data = images.xclbin(None, sections=[(images.MCS, 'mcs', b'\xff' * 64)])
    with pytest.raises(messaging.ExpectedException) as raised:
        agent.flash_firmware(ADMIN, _job(driver, U250,
                                         server.job_image(IMAGE, data)))
    assert 'flash write failed' in str(raised.value.exc_info[1])
