"""A real ``cyborg-like-all-in-one`` process for the client tests.

Each test module gets its own (conftest.py): a subprocess on a free port
with its own state directory, the fake driver reporting INVENTORY and a
bitstream directory holding BITSTREAMS. It is ready once the devices are
served, and is stopped with SIGTERM at the end of the module.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import requests
import yaml

HOST = 'clients-compute-1'
FPGA_PCI = '0000:5e:00.0'
# What the fake driver reports: an FPGA with two regions and a GPU.
INVENTORY = {'devices': [
    {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC N3000',
     'pci_address': FPGA_PCI,
     'std_board_info': {'device_id': '0x0b30', 'class': '0x120000'},
     'vendor_board_info': {
         'pr_interface_id': '9346116d-a52d-5ca8-b06a-a89a2a2f4a1f'},
     'deployables': [
         {'name': 'region0', 'bitstream_id': None,
          'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL_N3000'},
          'pci_functions': ['0000:5e:00.1']},
         {'name': 'region1', 'bitstream_id': None,
          'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL_N3000'},
          'pci_functions': ['0000:5e:00.2']}]},
    {'type': 'GPU', 'vendor': '0x10de', 'model': 'A100',
     'pci_address': '0000:af:00.0',
     'std_board_info': {'device_id': '0x20b0', 'class': '0x030200'},
     'deployables': [
         {'name': 'gpu0',
          'attributes': {'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA_A100'},
          'pci_functions': ['0000:af:00.0']}]},
]}
# The PCI function each deployable hands out, as Nova reads it from an ARQ.
HANDLES = {
    'region0': {'domain': '0000', 'bus': '5e', 'device': '00',
                'function': '1'},
    'region1': {'domain': '0000', 'bus': '5e', 'device': '00',
                'function': '2'},
    'gpu0': {'domain': '0000', 'bus': 'af', 'device': '00',
             'function': '0'},
}
# Bitstreams the agent can program; the fake driver refuses "FAIL ...".
BITSTREAMS = {
    'bs-gzip-1': 'GBS fake gzip accelerator\n',
    'bs-refused': 'FAIL PR interface id mismatch\n',
}
START_TIMEOUT = 60
STOP_TIMEOUT = 30
LOG_TAIL = 60


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _command():
    script = os.path.join(os.path.dirname(sys.executable),
                          'cyborg-like-all-in-one')
    if os.path.exists(script):
        return [script]
    found = shutil.which('cyborg-like-all-in-one')
    if found:
        return [found]
    return [sys.executable, '-c',
            'import sys; from cyborg_like.cmd.all_in_one import main; '
            'sys.exit(main())']


class Service:
    """One running cyborg-like-all-in-one and what the tests need of it."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.port = _free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.host = HOST
        self.log_path = os.path.join(workdir, 'all-in-one.log')
        self.bitstream_dir = os.path.join(workdir, 'bitstreams')
        self.proc = None
        self._log = None

    def write_files(self):
        os.makedirs(self.bitstream_dir)
        for name, content in BITSTREAMS.items():
            with open(os.path.join(self.bitstream_dir, name), 'w') as f:
                f.write(content)
        inventory = os.path.join(self.workdir, 'inventory.yaml')
        with open(inventory, 'w') as f:
            yaml.safe_dump(INVENTORY, f)
        self.config_file = os.path.join(self.workdir, 'cyborg_like.conf')
        with open(self.config_file, 'w') as f:
            f.write('[DEFAULT]\n'
                    'host = %s\n'
                    'state_path = %s\n'
                    '[api]\n'
                    'host_ip = 127.0.0.1\n'
                    'port = %d\n'
                    '[fake_driver]\n'
                    'inventory_file = %s\n'
                    '[agent]\n'
                    'bitstream_dir = %s\n'
                    % (self.host, os.path.join(self.workdir, 'state'),
                       self.port, inventory, self.bitstream_dir))

    def start(self):
        self.write_files()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(
            _command() + ['--config-file', self.config_file],
            stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, cwd=self.workdir)
        self._wait_for_devices()
        self._wait_until_binding_works()
        return self

    def _wait_for_devices(self):
        wanted = len(INVENTORY['devices'])
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    'cyborg-like-all-in-one exited with %s while starting:\n'
                    '%s' % (self.proc.returncode, self.log_tail()))
            try:
                devices = requests.get(self.url + '/v2/devices',
                                       timeout=5).json()['devices']
                if len(devices) == wanted:
                    return
            except (requests.RequestException, ValueError, KeyError):
                pass
            time.sleep(0.2)
        raise RuntimeError('cyborg-like-all-in-one did not serve its %d '
                           'devices within %ds:\n%s'
                           % (wanted, START_TIMEOUT, self.log_tail()))

    def _wait_until_binding_works(self):
        """Ready means an ARQ binds: listed devices are not enough, their
        host must also count as up (heartbeats are written in batches).
        A probe ARQ on the GPU is bound and deleted until that works."""
        api = self.url + '/v2'
        profile = 'clients-readiness-probe'
        resp = requests.post(api + '/device_profiles', timeout=10, json={
            'name': profile, 'groups': [{'resources:PGPU': '1'}]})
        resp.raise_for_status()
        rp_uuid = self.rp_uuid('gpu0')
        deadline = time.monotonic() + START_TIMEOUT
        reason = None
        while time.monotonic() < deadline:
            (arq,) = requests.post(
                api + '/accelerator_requests', timeout=10,
                json={'device_profile_name': profile}).json()['arqs']
            requests.patch(api + '/accelerator_requests', timeout=10, json={
                arq['uuid']: [
                    {'op': 'add', 'path': '/hostname', 'value': self.host},
                    {'op': 'add', 'path': '/device_rp_uuid',
                     'value': rp_uuid},
                    {'op': 'add', 'path': '/instance_uuid',
                     'value': arq['uuid']}]}).raise_for_status()
            while (arq['state'] not in ('Bound', 'BindFailed')
                   and time.monotonic() < deadline):
                time.sleep(0.05)
                arq = requests.get(api + '/accelerator_requests/'
                                   + arq['uuid'], timeout=10).json()
            requests.delete(api + '/accelerator_requests', timeout=10,
                            params={'arqs': arq['uuid']}).raise_for_status()
            if arq['state'] == 'Bound':
                requests.delete(api + '/device_profiles/' + profile,
                                timeout=10).raise_for_status()
                return
            reason = arq['state_reason']
            time.sleep(0.2)
        raise RuntimeError('No ARQ could be bound within %ds (last reason: '
                           '%s):\n%s' % (START_TIMEOUT, reason,
                                          self.log_tail()))

    def stop(self):
        """SIGTERM; the exit code (the process is killed if it hangs)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError(
                    'cyborg-like-all-in-one ignored SIGTERM for %ds:\n%s'
                    % (STOP_TIMEOUT, self.log_tail()))
        self._log.close()
        return self.proc.returncode

    def log_tail(self, lines=LOG_TAIL):
        try:
            with open(self.log_path, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return '(no log)'

    # What the tests look up over plain HTTP, as Nova gets it from
    # Placement: the resource provider of a deployable.
    def deployable(self, name):
        found = requests.get(self.url + '/v2/deployables',
                             params={'name': name}, timeout=10).json()
        (deployable,) = found['deployables']
        return deployable

    def rp_uuid(self, name):
        return self.deployable(name)['rp_uuid']


def wait_for(predicate, timeout=30, interval=0.2, what='condition'):
    """Poll ``predicate`` until it returns something truthy; return it."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError('Timed out after %ss waiting for %s'
                                 % (timeout, what))
        time.sleep(interval)
