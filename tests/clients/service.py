"""A real ``cyborg-like-all-in-one`` process for the client tests.

Each test module gets its own (conftest.py): a subprocess on a free port
with its own state directory, the fake driver reporting INVENTORY and a
bitstream directory holding BITSTREAMS. It is ready once the devices are
served, and is stopped with SIGTERM at the end of the module.
"""

import os
import time

import requests
import yaml

from harness import cloud

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
     # It takes MIG layouts (the fake driver's profiles of an A100 80GB).
     'mig_profiles': {'1g.10gb': {'slices': 1, 'instances': 7},
                      '3g.40gb': {'slices': 3, 'instances': 2},
                      '4g.40gb': {'slices': 4, 'instances': 1}},
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


class Service:
    """One running cyborg-like-all-in-one and what the tests need of it."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.host = HOST
        self.bitstream_dir = os.path.join(workdir, 'bitstreams')
        inventory = os.path.join(workdir, 'inventory.yaml')
        self._write_files(inventory)
        # Its own defaults: SQLite in state_path, in-process messaging, no
        # authentication.
        self.cloud = cloud.Cloud(
            workdir, layout=cloud.ALL_IN_ONE, host=HOST, auth_strategy=None,
            config={'fake_driver': {'inventory_file': inventory},
                    'agent': {'bitstream_dir': self.bitstream_dir}})
        self.url = self.cloud.api_url
        self.process = self.cloud.services['all-in-one']
        self.log_path = self.process.log_path

    def _write_files(self, inventory):
        os.makedirs(self.bitstream_dir)
        for name, content in BITSTREAMS.items():
            with open(os.path.join(self.bitstream_dir, name), 'w') as f:
                f.write(content)
        with open(inventory, 'w') as f:
            yaml.safe_dump(INVENTORY, f)

    def start(self):
        self.process.start(START_TIMEOUT)
        self._wait_for_devices()
        self._wait_until_binding_works()
        self._wait_until_settled()
        return self

    def _wait_for_devices(self):
        wanted = len(INVENTORY['devices'])
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not self.process.running:
                raise RuntimeError(
                    'cyborg-like-all-in-one exited while starting:\n%s'
                    % self.log_tail())
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

    def _wait_until_settled(self):
        """What a test may count on from its first request, though it
        comes after the readiness above: the probe ARQ's handle released
        (the agent confirms a release: until then the GPU is in use, and
        a MIG layout, a flash or a driver operation is refused), and the
        agent's version known (it comes with the first heartbeat, the
        host being up from the first inventory report; driver operations
        are refused until it is)."""
        latest = {'OpenStack-API-Version': 'accelerator latest'}

        def settled():
            totals = requests.get(self.url + '/v2/availability',
                                  headers=latest, timeout=10).json()['totals']
            host = requests.get('%s/v2/hosts/%s' % (self.url, self.host),
                                headers=latest, timeout=10).json()
            return (totals['free'] == totals['total']
                    and host.get('agent_version'))

        wait_for(settled, timeout=START_TIMEOUT, interval=0.1,
                 what='the probe ARQ released and the agent version heard')

    def stop(self):
        """SIGTERM; the exit code (None: it ignored SIGTERM for
        STOP_TIMEOUT seconds and was killed)."""
        return self.process.stop(STOP_TIMEOUT)

    def log_tail(self, lines=LOG_TAIL):
        return self.process.tail(lines) or '(no log)'

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
