"""Binds of a GPU whole and of its parts racing, served by two conductor
processes over RabbitMQ, on MariaDB and on PostgreSQL.

The GPU is offered whole (its PF, one handle) and, at the same time, as
SR-IOV virtual functions (PARTS handles): what an inventory may say while
a vGPU type is being enabled, or a report lags the hardware. REQUESTS
binds start at once, WHOLE_REQUESTS of them for the whole GPU and the
rest for parts, half of each kind on each binding path: Nova's (PATCH
with the resource provider) and standalone scheduling (POST .../schedule,
the conductor picks). A GPU is handed out whole or in parts, never both
(db/partitions.py): while a round runs, no read of the database rows
finds the whole and a part in use together, and after it the database
holds either the whole bound and no part, or no whole and every part
bound (the part requests outnumber the parts), each failure says why,
and nothing is left half-bound.
"""

import concurrent.futures
import threading
import uuid

import pytest
import requests
import sqlalchemy as sa

from . import arq_states
from .infra import BACKENDS
from .infra import running_deployment
from .sampling import Sampling
from .test_concurrency import JSON
from .test_concurrency import _request
from .test_concurrency import _unbind

pytestmark = pytest.mark.integration

PARTS = 4
REQUESTS = 50
WHOLE_REQUESTS = 10
ROUNDS = 3
MODEL = 'A100'
PF = '0000:af:00.0'
VFS = ['0000:af:00.%d' % function for function in range(4, 4 + PARTS)]
INVENTORY = {'devices': [
    {'type': 'GPU', 'vendor': '0x10de', 'model': MODEL, 'pci_address': PF,
     'std_board_info': {'device_id': '0x20b5', 'class': '0x030200'},
     'deployables': [
         {'name': 'gpu0', 'attributes': {'rc': 'PGPU'},
          'pci_functions': [PF]},
         {'name': 'vgpu-a100-4c', 'num_accelerators': PARTS,
          'attributes': {'rc': 'CUSTOM_VGPU_A100_4C'},
          'pci_functions': VFS}]}]}
EXTRA_CONFIG = '[api]\nconductor_timeout = 30\n'
REASONS = ('No free attach handle', 'never both', 'No free deployable')


@pytest.fixture(scope='module', params=BACKENDS)
def two_conductors(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('partitions-%s' % request.param))
    with running_deployment(
            request.param, workdir, conductors=2, inventory=INVENTORY,
            extra_config=EXTRA_CONFIG,
            wait_for_devices=lambda devices: [
                d['model'] for d in devices] == [MODEL]) as dep:
        yield dep


def _arqs(dep, resource_class, count):
    profile = 'one-%s-%s' % (resource_class.lower(), uuid.uuid4().hex[:8])
    _request(dep, 'POST', '/v2/device_profiles',
             {'name': profile,
              'groups': [{'resources:%s' % resource_class: '1'}]},
             expected=201)
    return [_request(dep, 'POST', '/v2/accelerator_requests',
                     {'device_profile_name': profile},
                     expected=201)['arqs'][0]['uuid'] for _ in range(count)]


def _bind_all_at_once(dep, rp_by_arq):
    """One bind per ARQ, all released together: Nova's PATCH to the
    ARQ's resource provider, or a standalone schedule where it is None."""
    barrier = threading.Barrier(len(rp_by_arq))

    def bind(arq):
        barrier.wait(timeout=30)
        try:
            return _send_bind(dep, arq, rp_by_arq[arq])
        except requests.RequestException as error:
            return repr(error)

    with concurrent.futures.ThreadPoolExecutor(len(rp_by_arq)) as pool:
        answers = dict(zip(rp_by_arq, pool.map(bind, rp_by_arq)))
    assert set(answers.values()) == {202}, answers


def _send_bind(dep, arq, rp_uuid):
    if rp_uuid is None:
        return requests.post(
            '%s/v2/accelerator_requests/%s/schedule' % (dep.api_url, arq),
            json={'instance_uuid': str(uuid.uuid4())}, headers=JSON,
            timeout=60).status_code
    body = {arq: [
        {'op': 'add', 'path': '/hostname', 'value': dep.host},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid',
         'value': str(uuid.uuid4())}]}
    return requests.patch(dep.api_url + '/v2/accelerator_requests',
                          json=body, headers=JSON, timeout=60).status_code


class _Watch(Sampling):
    """Reads the handles in use again and again while a round runs
    (paced, so that the reads leave the conductors their CPU), keeping
    every read that finds the GPU whole and in parts at once."""

    def __init__(self, dep):
        super().__init__()
        self.dep = dep
        self.both = []
        self.reads = 0
        self.error = None

    def sample(self):
        try:
            held = _in_use(self.dep)
        except Exception as error:      # said by the test, not lost
            self.error = error
            return False
        self.reads += 1
        if held.get('gpu0') and held.get('vgpu-a100-4c'):
            self.both.append(held)


def _in_use(dep):
    """{deployable name: handles in use}, read from the database."""
    with dep.engine.connect() as conn:
        rows = conn.execute(sa.text(
            'SELECT d.name, h.in_use FROM attach_handles h '
            'JOIN deployables d ON d.id = h.deployable_id')).all()
    found = {}
    for row in rows:
        found[row.name] = found.get(row.name, 0) + bool(row.in_use)
    return found


def test_a_gpu_is_never_bound_whole_and_in_parts(two_conductors):
    dep = two_conductors
    deployables = {d['name']: d for d in dep.list_ok('deployables')}
    whole, parts = deployables['gpu0'], deployables['vgpu-a100-4c']
    with dep.engine.connect() as conn:
        whole_id = conn.execute(sa.text(
            "SELECT id FROM deployables WHERE name = 'gpu0'")).scalar()
    assert (whole['parent_id'], parts['parent_id']) == (None, whole_id)
    wholes = _arqs(dep, 'PGPU', WHOLE_REQUESTS)
    slices = _arqs(dep, 'CUSTOM_VGPU_A100_4C', REQUESTS - WHOLE_REQUESTS)
    # Every other ARQ of each kind is scheduled standalone (None).
    rp_by_arq = dict(
        [(a, None if n % 2 else whole['rp_uuid'])
         for n, a in enumerate(wholes)]
        + [(a, None if n % 2 else parts['rp_uuid'])
           for n, a in enumerate(slices)])
    dep.wait_host_up()

    outcomes = []
    for _ in range(ROUNDS):
        with _Watch(dep) as watch:
            _bind_all_at_once(dep, rp_by_arq)
            arqs = arq_states.wait_resolved(dep, list(rp_by_arq),
                                            timeout=90, poll=0.2)
        assert watch.error is None and watch.reads, watch.error
        assert not watch.both, watch.both
        bound = {u for u, a in arqs.items() if a['state'] == 'Bound'}
        for arq in arqs.values():
            if arq['state'] != 'Bound':
                assert arq['state'] == 'BindFailed', arq
                assert any(r in arq['state_reason'] for r in REASONS), arq
        held = _in_use(dep)
        # Whole or in parts, never both; and what is bound is what the
        # handles in use say.
        assert (held['gpu0'], held['vgpu-a100-4c']) in ((1, 0), (0, PARTS)), \
            held
        assert len(bound & set(wholes)) == held['gpu0'], held
        assert len(bound & set(slices)) == held['vgpu-a100-4c'], held
        outcomes.append('%s (%s; %d reads)' % (
            'whole' if held['gpu0'] else 'parts',
            'scheduled' if all(rp_by_arq[a] is None for a in bound)
            else 'Nova' if all(rp_by_arq[a] for a in bound) else 'both',
            watch.reads))
        _unbind(dep, list(rp_by_arq))
        assert not any(_in_use(dep).values())
    print('partition race outcomes on %s: %s' % (dep.backend, outcomes))
