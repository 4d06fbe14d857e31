"""A steady load of binds and unbinds through the API, for the faults.

One worker per GPU of the inventory runs cycles of: create an ARQ, bind
it to its GPU, wait until it is Bound (or BindFailed), unbind it, delete
it. Every answer is kept (status, when, request id) so that a test can
say how long the API answered 503 and check every 2xx against the rows:
an ARQ answered 503 at creation must not exist, one whose DELETE was
answered 503 is deleted again later (``drain``), and at the end no ARQ,
attach handle or change is left that nobody answered 2xx for.
"""

import threading
import time
import uuid

from harness.infra import HarnessError
from harness.infra import wait_for
from tests.integration.cuts import timed

PROFILE = 'cluster-gpu'
SETTLE_TIMEOUT = 30.0
# The rollout running through the fault: REGIONS FPGA regions from
# ``bs-old`` to ``bs-new`` (the fake driver takes about a second for it).
BITSTREAMS = {'bs-old': 'GBS old\n', 'bs-new': 'SLEEP 1\n'}
REGIONS = 4
ROLLOUT = {'kind': 'bitstream', 'image': 'bs-new',
           'strategy': {'canary': 1, 'waves': [REGIONS - 1],
                        'max_unavailable': 1, 'failure_budget': 1}}


def inventory(gpus):
    """``gpus`` GPUs of one deployable and one attach handle each (the
    bind load's), and FPGAs of two regions holding ``bs-old`` (the
    rollout's)."""
    gpu = [{'type': 'GPU', 'vendor': '0x10de', 'model': 'Tesla T4',
            'pci_address': '0000:a%d:00.0' % i,
            'std_board_info': {'device_id': '0x1eb8', 'class': '0x030200'},
            'deployables': [{'name': 'gpu%d' % i,
                             'attributes': {'rc': 'PGPU'},
                             'pci_functions': ['0000:a%d:00.0' % i]}]}
           for i in range(gpus)]
    fpga = [{'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC Arria 10 GX',
             'pci_address': '0000:b%d:00.0' % n,
             'std_board_info': {'device_id': '0x09c4', 'class': 'FPGA'},
             'deployables': [
                 {'name': 'region%d-%d' % (n, r), 'bitstream_id': 'bs-old',
                  'attributes': {'rc': 'FPGA',
                                 'trait0': 'CUSTOM_FPGA_INTEL'},
                  'pci_functions': ['0000:b%d:00.%d' % (n, r + 1)]}
                 for r in range(2)]}
            for n in range(REGIONS // 2)]
    return {'devices': gpu + fpga}


class BindLoad:
    """Workers binding and unbinding, one per GPU named ``gpus``."""

    def __init__(self, dep, gpus):
        self.dep = dep
        self.answers = []
        self.created = set()        # ARQs answered 201
        self.deleted = set()        # ARQs whose DELETE was answered 2xx
        self._undeleted = set()     # created and not yet deleted
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rps = {}
        for gpu in gpus:
            [deployable] = dep.call(
                'GET', '/v2/deployables?name=%s' % gpu).json()['deployables']
            self._rps[gpu] = deployable['rp_uuid']
        self._threads = [threading.Thread(target=self._run, args=(rp,),
                                          daemon=True)
                         for rp in self._rps.values()]

    def start(self):
        for thread in self._threads:
            thread.start()
        return self

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2 * SETTLE_TIMEOUT)

    def _send(self, kind, method, path, body=None):
        answer = timed(method, self.dep.api_url + path, json=body)
        answer['kind'] = kind
        answer['at'] = time.monotonic() - answer['elapsed']
        with self._lock:
            self.answers.append(answer)
        return answer

    def _run(self, rp_uuid):
        while not self._stop.is_set():
            self._cycle(rp_uuid)

    def _cycle(self, rp_uuid):
        made = self._send('create', 'POST', '/v2/accelerator_requests',
                          {'device_profile_name': PROFILE})
        if made['status'] != 201:
            self._stop.wait(0.2)
            return
        [arq] = made['arqs']
        with self._lock:
            self.created.add(arq)
            self._undeleted.add(arq)
        bound = self._send('bind', 'PATCH', '/v2/accelerator_requests', {
            arq: [{'op': 'add', 'path': '/hostname', 'value': self.dep.host},
                  {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
                  {'op': 'add', 'path': '/instance_uuid',
                   'value': str(uuid.uuid4())}]})
        if bound['status'] == 202:
            self._settled(arq)
            self._send('unbind', 'PATCH', '/v2/accelerator_requests', {
                arq: [{'op': 'remove', 'path': '/hostname'},
                      {'op': 'remove', 'path': '/device_rp_uuid'},
                      {'op': 'remove', 'path': '/instance_uuid'}]})
        self._delete(arq)

    def _settled(self, arq):
        """Until the bind ended (Bound or BindFailed), bounded."""
        until = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < until and not self._stop.is_set():
            got = self._send('get', 'GET',
                             '/v2/accelerator_requests/%s' % arq)
            if got['status'] == 200 and '"BindStarted"' not in got['body']:
                return
            self._stop.wait(0.2)

    def _delete(self, arq):
        gone = self._send('delete', 'DELETE',
                          '/v2/accelerator_requests?arqs=%s' % arq)
        # 404: an earlier DELETE answered 503 was carried out (the checks
        # find its change record and fail on it).
        if gone['status'] in (202, 204, 404):
            with self._lock:
                self.deleted.add(arq)
                self._undeleted.discard(arq)
        return gone

    def drain(self, timeout=60.0):
        """Delete what the cycles left (a DELETE answered 503); True once
        every ARQ answered 201 is deleted."""
        def round_done():
            for arq in sorted(self._undeleted):
                self._delete(arq)
            return not self._undeleted
        try:
            wait_for(round_done, timeout=timeout, interval=0.5)
        except HarnessError:
            return False
        return True

    # -- what the answers say

    def refused(self):
        return [a for a in self.answers if a['status'] == 503]

    def unexpected(self):
        """Answers neither 2xx nor 503 (a 500, no answer at all)."""
        return [a for a in self.answers
                if not (isinstance(a['status'], int)
                        and (200 <= a['status'] < 300
                             or a['status'] == 503))]

    def window(self, since):
        """(first, last) second after ``since`` at which an answer was
        503, or None."""
        refused = [a for a in self.refused() if a['at'] >= since]
        if not refused:
            return None
        return (min(a['at'] for a in refused) - since,
                max(a['at'] + a['elapsed'] for a in refused) - since)

    def ok(self, since=0.0):
        return [a for a in self.answers if isinstance(a['status'], int)
                and 200 <= a['status'] < 300 and a['at'] >= since]
