"""Shared fixtures for the hardware tests: umockdev testbeds, fake vendor
tools, bitstream files. See /work/shared/TEST-HARDWARE.md.

umockdev's preload library must be in the process from its start (libudev
resolves /sys through it), so when it is not, this conftest re-executes the
whole pytest command under ``umockdev-wrapper``. Without umockdev installed
the run fails loudly: skipping would let drivers read the host's real /sys
and pass or fail for the wrong reasons.

Testbeds are hand-written umockdev records in testbeds/ (see the comment at
the top of each). umockdev-run builds each once per session into a
directory; a test gets its own copy, selected with UMOCKDEV_DIR, so what a
test or a fake tool writes into its sysfs never leaks into another test.
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

from oslo_config import cfg
import pytest

from cyborg_like.conf import default as default_conf
from cyborg_like.conf import intel_fpga as intel_fpga_conf
from cyborg_like.conf import pci_driver as pci_driver_conf
from cyborg_like.conf import xilinx_fpga as xilinx_fpga_conf

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBEDS = os.path.join(HERE, 'testbeds')
FAKE_TOOLS = os.path.join(HERE, 'fake_tools')
PRELOAD = 'libumockdev-preload.so'
_REEXECUTED = 'CYBORG_LIKE_UMOCKDEV_REEXEC'


# -- running under umockdev's preload ----------------------------------------

def preload_loaded():
    with open('/proc/self/maps') as f:
        return PRELOAD in f.read()


def pytest_configure(config):
    if preload_loaded():
        return
    wrapper = shutil.which('umockdev-wrapper')
    if wrapper is None:
        pytest.exit('umockdev is not installed: the hardware tests need its '
                    'preload library (apt-get install umockdev)',
                    returncode=1)
    if os.environ.get(_REEXECUTED):
        pytest.exit('re-executed under %s, yet %s is not loaded'
                    % (wrapper, PRELOAD), returncode=1)
    # pytest has stdout/stderr redirected to capture files by now; give the
    # new process the real ones back.
    capture = config.pluginmanager.getplugin('capturemanager')
    if capture is not None:
        capture.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ[_REEXECUTED] = '1'
    os.execv(wrapper, [wrapper, sys.executable] + sys.orig_argv[1:])


# -- testbeds ----------------------------------------------------------------

class Testbed:
    """A private copy of one testbed, active through UMOCKDEV_DIR."""

    def __init__(self, root):
        self.root = root

    def path(self, sys_path):
        """Where ``/sys/...`` of the testbed really is, for tests that
        change the 'hardware' behind the driver's back."""
        return os.path.join(self.root, sys_path.lstrip('/'))

    def read(self, sys_path):
        with open(self.path(sys_path)) as f:
            return f.read()

    def write(self, sys_path, value):
        with open(self.path(sys_path), 'w') as f:
            f.write(value)

    def remove(self, sys_path):
        os.remove(self.path(sys_path))

    def set_driver(self, device, driver, bus='pci'):
        """Bind ``device`` (its /sys path) to ``driver``, or unbind it with
        None: the ``driver`` link and the uevent's DRIVER, as the kernel
        changes both."""
        link = self.path(device + '/driver')
        if os.path.lexists(link):
            os.remove(link)
        if driver is not None:
            target = self.path('/sys/bus/%s/drivers/%s' % (bus, driver))
            os.symlink(os.path.relpath(target, self.path(device)), link)
        uevent = [line for line in self.read(device + '/uevent').splitlines()
                  if not line.startswith('DRIVER=')]
        if driver is not None:
            uevent.insert(1, 'DRIVER=' + driver)
        self.write(device + '/uevent', '\n'.join(uevent) + '\n')


def _umockdev_env():
    # umockdev-run must not itself run under our preload and testbed.
    env = dict(os.environ)
    env.pop('LD_PRELOAD', None)
    env.pop('UMOCKDEV_DIR', None)
    return env


def build_testbed(name, directory):
    """Let umockdev-run turn testbeds/<name>.umockdev into a directory."""
    with open(os.path.join(TESTBEDS, name + '.umockdev')) as f:
        # umockdev's format has no comments; ours are stripped here, and
        # with them the blank lines they leave before the first device.
        text = ''.join(line for line in f if not line.startswith('#'))
    devices = [block.strip() for block in text.split('\n\n')]
    record = '\n\n'.join(block for block in devices if block) + '\n'
    record_path = os.path.join(directory, name + '.umockdev')
    with open(record_path, 'w') as f:
        f.write(record)
    target = os.path.join(directory, name)
    os.mkdir(target)
    # Only sys/: umockdev's dev/ links to the ptys of this short-lived
    # session and ioctl/ holds its socket, both dead once it exits.
    result = subprocess.run(
        ['umockdev-run', '--device', record_path, '--',
         'sh', '-c', 'cp -a "$UMOCKDEV_DIR/sys" "$1"', 'sh', target],
        env=_umockdev_env(), capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail('umockdev could not build testbed %s:\n%s'
                    % (name, result.stderr), pytrace=False)
    return target


@pytest.fixture(scope='session')
def testbed_templates(tmp_path_factory):
    built = {}
    directory = str(tmp_path_factory.mktemp('testbeds'))

    def template(name):
        if name not in built:
            built[name] = build_testbed(name, directory)
        return built[name]
    return template


@pytest.fixture
def testbed(testbed_templates, tmp_path, monkeypatch):
    """``testbed(name)`` activates a fresh copy of testbeds/<name>.umockdev
    and returns it as a :class:`Testbed`; calling it again switches."""
    def use(name):
        root = str(tmp_path / ('testbed-' + name))
        if not os.path.exists(root):
            shutil.copytree(testbed_templates(name), root, symlinks=True)
        monkeypatch.setenv('UMOCKDEV_DIR', root)
        return Testbed(root)
    return use


# -- fake vendor tools -------------------------------------------------------

class FakeTools:
    """The fakes of fake_tools/, first on PATH, logging their calls."""

    def __init__(self, log, monkeypatch):
        self.log = log
        self.monkeypatch = monkeypatch

    def calls(self, tool=None):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            calls = [json.loads(line) for line in f]
        return [c['argv'][1:] for c in calls if tool in (None, c['tool'])]

    def fail(self, tool):
        """Make ``tool`` fail the way the real one does on a hardware
        error."""
        self.monkeypatch.setenv('FAKE_%s_FAIL' % tool.upper(), '1')


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', FAKE_TOOLS + os.pathsep + os.environ['PATH'])
    log = str(tmp_path / 'fake-tool-calls.jsonl')
    monkeypatch.setenv('FAKE_TOOL_LOG', log)
    return FakeTools(log, monkeypatch)


# -- configuration -----------------------------------------------------------

@pytest.fixture
def conf(tmp_path):
    """Options of [DEFAULT] and of the pci and FPGA drivers, defaults."""
    conf = cfg.ConfigOpts()
    for module in (default_conf, pci_driver_conf, intel_fpga_conf,
                   xilinx_fpga_conf):
        module.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override('state_path', str(tmp_path / 'state'))
    return conf


# -- bitstreams --------------------------------------------------------------

GBS_GUID = bytes.fromhex('58656f6e 4650 4741 b747 425376303031')
GBS_MAGIC_NO = 488605312


def write_sha256(path, digest=None):
    """Write ``<path>.sha256`` as sha256sum would (or with ``digest``)."""
    if digest is None:
        with open(path, 'rb') as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    with open(path + '.sha256', 'w') as f:
        f.write('%s  %s\n' % (digest, os.path.basename(path)))


def gbs_bytes(interface_id, afu_id, payload=b'\x00rbf'):
    """A GBS as OPAE's packager writes it: GUID, metadata length (little
    endian), JSON metadata version 1, then the raw bitstream."""
    metadata = json.dumps({
        'version': 1, 'platform-name': 'n3000',
        'afu-image': {
            'magic-no': GBS_MAGIC_NO, 'interface-uuid': interface_id,
            'clock-frequency-high': 312.5, 'clock-frequency-low': 156.25,
            'power': 0,
            'accelerator-clusters': [{
                'name': 'nlb0', 'total-contexts': 1,
                'accelerator-type-uuid': afu_id}]}}).encode()
    return GBS_GUID + struct.pack('<I', len(metadata)) + metadata + payload


def xclbin_bytes(interface_id, xclbin_uuid, magic=b'xclbin2\0'):
    """An xclbin (struct axlf of XRT's xclbin.h) with no sections: 304
    bytes of preamble, the 152-byte axlf_header, one empty section
    header."""
    body_length = 304 + 152 + 40
    header = struct.pack(
        '<QQQHBBHH16s64s16s16sI4x', body_length, 1700000000, 0, 0, 2, 14,
        0, 0, bytes.fromhex(interface_id.replace('-', '')),
        b'xilinx_u250_gen3x16_xdma_shell_3_1',
        bytes.fromhex(xclbin_uuid.replace('-', '')), b'', 0)
    preamble = magic + struct.pack('<i', -1) + b'\xff' * 28 + b'\0' * 256 + \
        struct.pack('<Q', 0)
    return preamble + header + b'\0' * 40


@pytest.fixture
def bitstreams(tmp_path):
    """Factories writing bitstream files (with a matching .sha256)."""
    directory = tmp_path / 'bitstreams'
    directory.mkdir()

    class Factory:
        @staticmethod
        def gbs(name, interface_id, afu_id, checksum=True):
            return Factory.write(name, gbs_bytes(interface_id, afu_id),
                                 checksum)

        @staticmethod
        def xclbin(name, interface_id, xclbin_uuid, checksum=True, **kw):
            return Factory.write(
                name, xclbin_bytes(interface_id, xclbin_uuid, **kw),
                checksum)

        @staticmethod
        def write(name, data, checksum=True):
            path = str(directory / name)
            with open(path, 'wb') as f:
                f.write(data)
            if checksum:
                write_sha256(path)
            return path
    return Factory
