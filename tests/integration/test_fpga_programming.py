"""End to end over RabbitMQ: binding an ARQ whose device profile names a
bitstream makes the agent program the right FPGA region, exactly once, with
the real intel_fpga driver; a failed programming leaves the ARQ BindFailed
with the tool's own error and its attach handle free.

The agent process runs the real ``intel_fpga`` driver under umockdev's
preload (``umockdev-wrapper``) on a private copy of the Intel PAC N3000
testbed of tests/hardware, with the fake OPAE ``fpgaconf`` of
tests/hardware/fake_tools first on its PATH: the fake checks its command
line and the GBS, writes the programmed AFU id into the testbed's sysfs
(where the driver reads it back) and logs every invocation. A two-line
wrapper in front of it makes it fail, as a card whose PR engine reports an
error, while a flag file exists. See /work/shared/TEST-HARDWARE.md.
"""

import json
import os
import shutil
import uuid

import pytest
import requests
import sqlalchemy as sa

from cyborg_like.common import inventory
from tests.hardware.conftest import FAKE_TOOLS
from tests.hardware.conftest import build_testbed
from tests.hardware.conftest import gbs_bytes
from tests.hardware.conftest import write_sha256

from .infra import BACKENDS
from .infra import WAIT_TIMEOUT
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

TESTBED = 'intel_pac_n3000'
PF = '0000:60:00.0'         # the card's PF: its device and, SR-IOV off,
PF_SYS = '/sys/bus/pci/devices/' + PF       # the region's attach handle
PORT_AFU_ID = PF_SYS + '/fpga_region/region0/dfl-port.0/afu_id'
MODEL = 'PAC N3000'
INTERFACE_TRAIT = 'CUSTOM_FPGA_INTERFACE_'
TOOL_ERROR = 'Error writing bitstream to FPGA: reconfiguration error'
JSON = {'Content-Type': 'application/json',
        'OpenStack-API-Version': 'accelerator latest'}
EXTRA_CONFIG = '[api]\nconductor_timeout = 30\n'

FAILING_WRAPPER = """#!/bin/sh
# fpgaconf as a card whose PR engine reports an error while %(flag)s exists.
if [ -e '%(flag)s' ]; then FAKE_FPGACONF_FAIL=1; export FAKE_FPGACONF_FAIL; fi
exec '%(fake)s' "$@"
"""


class FPGAHost:
    """What the test controls on the agent's side: the testbed, the
    bitstream directory and the fake tool."""

    def __init__(self, workdir):
        self.workdir = workdir
        templates = os.path.join(workdir, 'testbed-template')
        os.mkdir(templates)
        self.root = os.path.join(workdir, 'testbed')
        shutil.copytree(build_testbed(TESTBED, templates), self.root,
                        symlinks=True)
        self.bitstream_dir = os.path.join(workdir, 'bitstreams')
        os.mkdir(self.bitstream_dir)
        self.tool_log = os.path.join(workdir, 'fake-tool-calls.jsonl')
        self.fail_flag = os.path.join(workdir, 'fpgaconf-fails')
        bin_dir = os.path.join(workdir, 'bin')
        os.mkdir(bin_dir)
        wrapper = os.path.join(bin_dir, 'fpgaconf')
        with open(wrapper, 'w') as f:
            f.write(FAILING_WRAPPER % {
                'flag': self.fail_flag,
                'fake': os.path.join(FAKE_TOOLS, 'fpgaconf')})
        os.chmod(wrapper, 0o755)
        self.env = {'UMOCKDEV_DIR': self.root,
                    'FAKE_TOOL_LOG': self.tool_log,
                    'PATH': os.pathsep.join([bin_dir, FAKE_TOOLS,
                                             os.environ['PATH']])}
        self.config = ('[agent]\nenabled_drivers = intel_fpga\n'
                       'bitstream_dir = %s\n' % self.bitstream_dir)

    def sysfs(self, path):
        with open(os.path.join(self.root, path.lstrip('/'))) as f:
            return f.read().strip()

    def add_bitstream(self, interface_id, afu_id):
        """A GBS for the PR interface, named by its AFU id (the bitstream
        id), with its .sha256 beside it; returns its path."""
        path = os.path.join(self.bitstream_dir, afu_id)
        with open(path, 'wb') as f:
            f.write(gbs_bytes(interface_id, afu_id))
        write_sha256(path)
        return path

    def fpgaconf_calls(self):
        if not os.path.exists(self.tool_log):
            return []
        with open(self.tool_log) as f:
            return [json.loads(line)['argv'][1:] for line in f
                    if json.loads(line)['tool'] == 'fpgaconf']

    def fail_tool(self, failing):
        if failing:
            open(self.fail_flag, 'w').close()
        elif os.path.exists(self.fail_flag):
            os.remove(self.fail_flag)


@pytest.fixture(scope='module', params=BACKENDS)
def fpga_cloud(request, tmp_path_factory):
    """(deployment, FPGAHost): API and conductor, and an agent with the
    intel_fpga driver on the umockdev PAC N3000, which the API already
    shows."""
    wrapper = shutil.which('umockdev-wrapper')
    if wrapper is None:
        pytest.fail('umockdev is not installed (apt-get install umockdev): '
                    'the agent needs its preload library', pytrace=False)
    workdir = str(tmp_path_factory.mktemp('fpga-%s' % request.param))
    host = FPGAHost(workdir)
    with running_deployment(
            request.param, workdir, inventory={'devices': []},
            extra_config=EXTRA_CONFIG, agent_config=host.config,
            agent_wrapper=[wrapper], agent_env=host.env,
            wait_for_devices=lambda devices: [
                d['model'] for d in devices] == [MODEL]) as dep:
        yield dep, host


def _request(dep, method, path, body=None, expected=200):
    resp = requests.request(method, dep.api_url + path, json=body,
                            headers=JSON, timeout=WAIT_TIMEOUT)
    assert resp.status_code == expected, (method, path, resp.status_code,
                                          resp.text)
    return resp.json() if resp.content else None


def _region(dep):
    [deployable] = [d for d in dep.list_ok('deployables')
                    if d['name'] == 'region0']
    return deployable


def _traits(deployable):
    return {v for a in json.loads(deployable['attributes_list'])
            for k, v in a.items() if k.startswith('trait')}


def _profile(dep, bitstream_id, interface_trait):
    name = 'n3000-%s' % uuid.uuid4().hex[:8]
    _request(dep, 'POST', '/v2/device_profiles', {
        'name': name,
        'groups': [{'resources:FPGA': '1',
                    'trait:CUSTOM_FPGA_INTEL_PAC_N3000': 'required',
                    'trait:' + interface_trait: 'required',
                    'accel:bitstream_id': bitstream_id}]}, expected=201)
    return name


def _new_arq(dep, profile):
    [arq] = _request(dep, 'POST', '/v2/accelerator_requests',
                     {'device_profile_name': profile}, expected=201)['arqs']
    return arq['uuid']


def _bind(dep, arq_uuid, rp_uuid):
    """Bind to region0 of the agent's host; the resolved ARQ."""
    _request(dep, 'PATCH', '/v2/accelerator_requests', {arq_uuid: [
        {'op': 'add', 'path': '/hostname', 'value': dep.host},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': str(uuid.uuid4())},
    ]}, expected=202)
    return wait_for(
        lambda: (lambda arq: arq if arq['state'] in ('Bound', 'BindFailed')
                 else None)(_request(dep, 'GET',
                                     '/v2/accelerator_requests/' + arq_uuid)),
        message='ARQ %s never left BindStarted' % arq_uuid)


def _unbind(dep, arq_uuid):
    _request(dep, 'PATCH', '/v2/accelerator_requests', {arq_uuid: [
        {'op': 'remove', 'path': '/hostname'},
        {'op': 'remove', 'path': '/device_rp_uuid'},
        {'op': 'remove', 'path': '/instance_uuid'}]}, expected=202)
    arq = _request(dep, 'GET', '/v2/accelerator_requests/' + arq_uuid)
    assert arq['state'] == 'Unbound', arq


def _handles_in_use(dep, deployable_uuid):
    with dep.engine.connect() as conn:
        rows = conn.execute(sa.text(
            'SELECT h.in_use FROM attach_handles h '
            'JOIN deployables d ON d.id = h.deployable_id '
            'WHERE d.uuid = :d'), {'d': deployable_uuid}).all()
    assert rows, 'region0 has no attach handle in the database'
    return [bool(row.in_use) for row in rows]


def _fpgaconf_argv(path):
    # fpgaconf selects the card by its PF's address; the port is on the PF.
    return ['--segment', '0x0000', '-B', '0x60', '-D', '0x00', '-F', '0x0',
            path]


def test_bind_programs_the_region_once_and_a_failure_is_reported(
        fpga_cloud):
    dep, host = fpga_cloud
    region = _region(dep)
    assert region['driver_name'] == 'intel_fpga'
    [interface_trait] = [t for t in _traits(region)
                         if t.startswith(INTERFACE_TRAIT)]
    assert 'CUSTOM_FPGA_INTEL_PAC_N3000' in _traits(region)
    interface_id = interface_trait[len(INTERFACE_TRAIT):].lower()
    factory_afu = region['bitstream_id']
    assert factory_afu, 'the testbed region should report its loaded AFU'

    # Bitstreams built for the region's PR interface; ids are AFU ids.
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    first_path = host.add_bitstream(interface_id, first)
    second_path = host.add_bitstream(interface_id, second)
    pf_info = inventory.pci_address_info(PF)
    dep.wait_host_up()

    # 1. Bind: the agent programs region0 with the bitstream, once.
    profile = _profile(dep, first, interface_trait)
    arq1 = _new_arq(dep, profile)
    bound = _bind(dep, arq1, region['rp_uuid'])
    assert bound['state'] == 'Bound', bound['state_reason']
    assert bound['attach_handle_type'] == 'PCI'
    assert bound['attach_handle_info'] == pf_info
    assert host.fpgaconf_calls() == [_fpgaconf_argv(first_path)]
    assert host.sysfs(PORT_AFU_ID) == first.replace('-', '')
    assert _region(dep)['bitstream_id'] == first
    assert _handles_in_use(dep, region['uuid']) == [True]

    # 2. Unbind, and bind another ARQ of the same profile: the region
    # already holds the bitstream, so the tool does not run again.
    _unbind(dep, arq1)
    assert _handles_in_use(dep, region['uuid']) == [False]
    arq2 = _new_arq(dep, profile)
    bound = _bind(dep, arq2, region['rp_uuid'])
    assert bound['state'] == 'Bound', bound['state_reason']
    assert bound['attach_handle_info'] == pf_info
    assert host.fpgaconf_calls() == [_fpgaconf_argv(first_path)]
    assert _region(dep)['bitstream_id'] == first
    programming = dep.services['agent'].read_log().count(
        'with bitstream %s' % first)
    assert programming == 1, 'the agent programmed %s %d times' % (
        first, programming)
    _unbind(dep, arq2)

    # 3. Another bitstream, and the tool fails: BindFailed with the tool's
    # message, the handle free again, the region unchanged.
    failing_profile = _profile(dep, second, interface_trait)
    arq3 = _new_arq(dep, failing_profile)
    host.fail_tool(True)
    try:
        failed = _bind(dep, arq3, region['rp_uuid'])
    finally:
        host.fail_tool(False)
    assert failed['state'] == 'BindFailed', failed
    assert TOOL_ERROR in failed['state_reason'], failed['state_reason']
    assert 'intel_fpga' in failed['state_reason'], failed['state_reason']
    assert failed['attach_handle_info'] == {}
    assert failed['attach_handle_uuid'] is None
    assert host.fpgaconf_calls() == [_fpgaconf_argv(first_path),
                                     _fpgaconf_argv(second_path)]
    assert _handles_in_use(dep, region['uuid']) == [False]
    assert _region(dep)['bitstream_id'] == first
    assert host.sysfs(PORT_AFU_ID) == first.replace('-', '')

    # 4. Once the card works again the same ARQ binds (after Nova's
    # unbind), so nothing was left half-bound.
    _unbind(dep, arq3)
    bound = _bind(dep, arq3, region['rp_uuid'])
    assert bound['state'] == 'Bound', bound['state_reason']
    assert bound['attach_handle_info'] == pf_info
    assert host.fpgaconf_calls()[2:] == [_fpgaconf_argv(second_path)]
    assert _region(dep)['bitstream_id'] == second
    assert host.sysfs(PORT_AFU_ID) == second.replace('-', '')
    _unbind(dep, arq3)
    assert _handles_in_use(dep, region['uuid']) == [False]
    _request(dep, 'DELETE', '/v2/accelerator_requests?arqs=%s,%s,%s'
             % (arq1, arq2, arq3), expected=204)
