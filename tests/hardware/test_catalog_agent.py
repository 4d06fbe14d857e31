"""The agent's catalog path with the real FPGA drivers: an image fetched
by URL over HTTP, verified against its sha256, cached, and programmed by
the fake vendor tools under the umockdev testbeds."""

import hashlib
import http.server
import os
import threading

import oslo_messaging as messaging
import pytest

from cyborg_like.agent import image_cache
from cyborg_like.agent import manager
from cyborg_like.agent import resource_tracker
from cyborg_like.common import context
from cyborg_like.common import exception
from cyborg_like.conf import CONF
from cyborg_like.drivers.fpga import intel
from cyborg_like.drivers.fpga import xilinx
from cyborg_like.drivers import pci
from tests.hardware import conftest as hw

N3000_PF = '0000:60:00.0'
N3000_PORT = ('/sys/bus/pci/devices/%s/fpga_region/region0/dfl-port.0/afu_id'
              % N3000_PF)
N3000_INTERFACE = '07c3d528-e581-4986-9a14-9917eb8c6a66'
NEW_AFU = 'cdb5b81b-84e9-41ce-8ea1-6f29f4be9700'
U250_MGMT = '0000:3b:00.0'
U250_INTERFACE = '3fbc8296-873b-4f3b-8fac-272bf18b2899'
XCLBIN_UUID = '3b42de75-8342-4936-a653-0c9ec19ddcb1'
IMAGE = '5d0c6e0e-7a39-4c55-9b1e-3a4f3b7c2a10'


class ImageServer:
    """Serves image data at /<uuid>, as the catalog API does, counting
    requests; ``data`` may be changed to serve damaged bytes."""

    def __init__(self):
        self.data = {}
        self.requests = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests += 1
                body = server.data.get(self.path.lstrip('/'))
                self.send_response(200 if body is not None else 404)
                self.send_header('Content-Length', str(len(body or b'')))
                self.end_headers()
                self.wfile.write(body or b'')

            def log_message(self, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        threading.Thread(target=self._httpd.serve_forever,
                         daemon=True).start()

    def job_image(self, uuid, data, served=None):
        self.data[uuid] = data if served is None else served
        return {'uuid': uuid, 'sha256': hashlib.sha256(data).hexdigest(),
                'size': len(data), 'url': 'http://127.0.0.1:%d/%s' % (
                    self._httpd.server_port, uuid)}

    def stop(self):
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


@pytest.fixture
def server():
    server = ImageServer()
    yield server
    server.stop()


def _agent(driver, tmp_path):
    tracker = resource_tracker.ResourceTracker(
        'compute-1', CONF, None, drivers={driver.name: driver})
    cache = image_cache.ImageCache(str(tmp_path / 'cache'), 10 * 1024 ** 2,
                                   image_cache.http_fetcher(CONF))
    return manager.AgentManager(CONF, tracker, images=cache)


def _job(driver, address, image, hardware_id):
    return {'driver_name': driver.name,
            'controlpath_id': pci.controlpath_id(address),
            'deployable_name': 'region0', 'deployable_uuid': 'x',
            'bitstream_id': hardware_id, 'image': image}


@pytest.fixture
def n3000_agent(testbed, fake_tools, conf, tmp_path):
    bed = testbed('intel_pac_n3000')
    driver = intel.IntelFPGADriver(conf)
    return bed, driver, _agent(driver, tmp_path)


def test_intel_image_is_fetched_once_verified_and_programmed(
        n3000_agent, fake_tools, server):
    bed, driver, agent = n3000_agent
    data = hw.gbs_bytes(N3000_INTERFACE, NEW_AFU)
    job = _job(driver, N3000_PF, server.job_image(IMAGE, data), NEW_AFU)
    assert agent.program(context.get_admin_context(), job) == NEW_AFU
    cached = os.path.join(agent.images.directory, IMAGE)
    assert fake_tools.calls('fpgaconf')[-1][-1] == cached
    assert bed.read(N3000_PORT).strip().replace('-', '') == \
        NEW_AFU.replace('-', '')
    # Again: from the cache, verified, no second download.
    agent.program(context.get_admin_context(), job)
    assert server.requests == 1
    assert len(fake_tools.calls('fpgaconf')) == 2


def test_intel_corrupted_download_is_refused_and_nothing_programmed(
        n3000_agent, fake_tools, server):
    bed, driver, agent = n3000_agent
    data = hw.gbs_bytes(N3000_INTERFACE, NEW_AFU)
    damaged = data[:-4] + b'XXXX'
    job = _job(driver, N3000_PF,
               server.job_image(IMAGE, data, served=damaged), NEW_AFU)
    before = bed.read(N3000_PORT)
    # The RPC endpoint marks a driver's refusal as expected (no traceback).
    with pytest.raises(messaging.ExpectedException) as raised:
        agent.program(context.get_admin_context(), job)
    error = raised.value.exc_info[1]
    assert isinstance(error, exception.DriverError)
    assert 'was refused' in str(error) and 'nothing was programmed' in \
        str(error)
    assert fake_tools.calls('fpgaconf') == []
    assert bed.read(N3000_PORT) == before
    assert agent.images.cached() == []
    assert os.listdir(agent.images.directory) == []


def test_intel_cached_file_damaged_on_disk_is_fetched_again(
        n3000_agent, fake_tools, server):
    bed, driver, agent = n3000_agent
    data = hw.gbs_bytes(N3000_INTERFACE, NEW_AFU)
    job = _job(driver, N3000_PF, server.job_image(IMAGE, data), NEW_AFU)
    agent.program(context.get_admin_context(), job)
    with open(os.path.join(agent.images.directory, IMAGE), 'r+b') as f:
        f.write(b'\0\0\0\0')
    agent.program(context.get_admin_context(), job)
    assert server.requests == 2
    assert len(fake_tools.calls('fpgaconf')) == 2


def test_xilinx_image_is_fetched_verified_and_programmed(
        testbed, fake_tools, conf, tmp_path, server):
    testbed('xilinx_alveo_u250')
    driver = xilinx.XilinxFPGADriver(conf)
    agent = _agent(driver, tmp_path)
    data = hw.xclbin_bytes(U250_INTERFACE, XCLBIN_UUID)
    job = _job(driver, U250_MGMT, server.job_image(IMAGE, data),
               XCLBIN_UUID)
    assert agent.program(context.get_admin_context(), job) == XCLBIN_UUID
    [call] = fake_tools.calls('xbmgmt')
    assert os.path.join(agent.images.directory, IMAGE) in call
    [device] = driver.discover()
    assert device.deployables[0].bitstream_id == XCLBIN_UUID


def test_an_unreachable_catalog_is_a_clear_refusal(n3000_agent, fake_tools,
                                                   server):
    bed, driver, agent = n3000_agent
    image = server.job_image(IMAGE, hw.gbs_bytes(N3000_INTERFACE, NEW_AFU))
    server.stop()
    with pytest.raises(messaging.ExpectedException) as raised:
        agent.program(context.get_admin_context(),
                      _job(driver, N3000_PF, image, NEW_AFU))
    error = raised.value.exc_info[1]
    assert isinstance(error, exception.DriverError)
    assert 'could not fetch %s' % image['url'] in str(error)
    assert fake_tools.calls('fpgaconf') == []
