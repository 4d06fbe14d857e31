"""Standalone schedules racing for a fleet, served by two conductor
processes over RabbitMQ, on MariaDB and on PostgreSQL.

The fake agent offers ten free deployables that match the profile (five
FPGA cards of two regions, one handle each) beside some that do not (a
region with a forbidden trait, GPUs). A hundred ARQs are scheduled at the
same moment (POST .../schedule, half pack, half spread), each for its own
consumer, so both conductors pick from the same rows at once. Exactly ten
must end Bound, each on its own matching handle, the ninety others
BindFailed ("No free deployable"), no handle held twice, the others
untouched; after unbinding, every handle is free again. (The machinery and
the two-conductor deployment are test_concurrency.py's.)
"""

import concurrent.futures
import re
import threading
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from . import arq_states
from .infra import BACKENDS
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

CARDS = 5
MATCHING = 2 * CARDS      # free deployables that match the profile
REQUESTS = 100
CONDUCTORS = 2
TRAIT = 'CUSTOM_FPGA_SCHEDULE_RACE'
JSON = {'Content-Type': 'application/json',
        'OpenStack-API-Version': 'accelerator latest'}
EXTRA_CONFIG = '[api]\nconductor_timeout = 60\n'


def _card(bus, traits, regions=2):
    return {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC N3000',
            'pci_address': '0000:%02x:00.0' % bus,
            'std_board_info': {'device_id': '0x0b30'},
            'deployables': [
                {'name': 'region%d' % n,
                 'attributes': dict({'rc': 'FPGA'}, **{
                     'trait%d' % i: t for i, t in enumerate(traits)}),
                 'pci_functions': ['0000:%02x:00.%d' % (bus, n + 1)]}
                for n in range(regions)]}


INVENTORY = {'devices': [
    _card(0x10 + n, [TRAIT]) for n in range(CARDS)] + [
    # Same resource class, but a trait the profile forbids.
    _card(0x30, [TRAIT, 'CUSTOM_FPGA_RESERVED']),
    {'type': 'GPU', 'vendor': '0x10de', 'model': 'T4',
     'pci_address': '0000:d8:00.0',
     'deployables': [{'name': 'gpu0', 'attributes': {
         'rc': 'PGPU', 'trait0': TRAIT},
         'pci_functions': ['0000:d8:00.0']}]}]}


@pytest.fixture(scope='module', params=BACKENDS)
def two_conductors(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('schedule-%s' % request.param))
    with running_deployment(
            request.param, workdir, conductors=CONDUCTORS,
            inventory=INVENTORY, extra_config=EXTRA_CONFIG,
            wait_for_devices=lambda devices: len(devices) == len(
                INVENTORY['devices'])) as dep:
        yield dep


def _schedule_all_at_once(dep, uuids):
    """POST one schedule per ARQ, all threads released together."""
    barrier = threading.Barrier(len(uuids))

    def schedule(n):
        body = {'instance_uuid': str(uuid.uuid4()), 'preferences': {
            'strategy': 'pack' if n % 2 else 'spread'}}
        barrier.wait(timeout=60)
        try:
            resp = requests.post(
                '%s/v2/accelerator_requests/%s/schedule' % (
                    dep.api_url, uuids[n]),
                json=body, headers=JSON, timeout=120)
        except requests.RequestException as error:
            return repr(error)
        return resp.status_code, resp.text

    with concurrent.futures.ThreadPoolExecutor(len(uuids)) as pool:
        answers = dict(zip(uuids, pool.map(schedule, range(len(uuids)))))
    refused = {u: answer for u, answer in answers.items()
               if not isinstance(answer, tuple) or answer[0] != 202}
    assert not refused, refused


def _handles_in_db(dep):
    """{handle id: (deployable uuid, device pci bus, in use)}"""
    with dep.engine.connect() as conn:
        rows = conn.execute(sa.text(
            'SELECT h.id, d.uuid, d.rp_uuid, h.in_use, h.attach_info '
            'FROM attach_handles h JOIN deployables d '
            'ON d.id = h.deployable_id')).all()
    return {row.id: row for row in rows}


def _arqs_in_db(dep, uuids):
    with dep.engine.connect() as conn:
        rows = conn.execute(sa.text(
            'SELECT uuid, state, attach_handle_id, scheduled '
            'FROM extended_accelerator_requests WHERE uuid IN :u')
            .bindparams(sa.bindparam('u', expanding=True)),
            {'u': list(uuids)}).all()
    return {row.uuid: row for row in rows}


def test_a_hundred_schedules_take_the_ten_free_deployables_once(
        two_conductors):
    dep = two_conductors
    matching = {d['rp_uuid'] for d in dep.list_ok('deployables')
                if d['name'].startswith('region')}
    profile = 'race-%s' % uuid.uuid4().hex[:8]
    dep.call('POST', '/v2/device_profiles', {'name': profile, 'groups': [{
        'resources:FPGA': '1', 'trait:%s' % TRAIT: 'required',
        'trait:CUSTOM_FPGA_RESERVED': 'forbidden'}]}, expected=201)
    uuids = [dep.call('POST', '/v2/accelerator_requests',
                      {'device_profile_name': profile},
                      expected=201).json()['arqs'][0]['uuid']
             for _ in range(REQUESTS)]
    dep.wait_host_up()
    offsets = {n: dep.services[n].log_size() for n in dep.conductor_names}

    started = time.monotonic()
    _schedule_all_at_once(dep, uuids)
    arqs = arq_states.wait_resolved(dep, uuids, timeout=180, poll=0.5)
    elapsed = time.monotonic() - started

    bound = {u: a for u, a in arqs.items() if a['state'] == 'Bound'}
    failed = {u: a for u, a in arqs.items() if a['state'] == 'BindFailed'}
    assert len(bound) == MATCHING, (len(bound), {
        u: a['state_reason'] for u, a in failed.items()})
    assert len(failed) == REQUESTS - MATCHING
    for arq in failed.values():
        assert arq['state_reason'].startswith('No free deployable'), arq
        assert arq['attach_handle_uuid'] is None
    # Every bound one on its own deployable, of those that match.
    rps = [a['device_rp_uuid'] for a in bound.values()]
    assert len(set(rps)) == MATCHING
    with dep.engine.connect() as conn:
        forbidden = set(conn.execute(sa.text(
            'SELECT d.rp_uuid FROM deployables d JOIN attributes a '
            "ON a.deployable_id = d.id WHERE a.value = "
            "'CUSTOM_FPGA_RESERVED'")).scalars())
    assert len(forbidden) == 2
    assert not set(rps) & forbidden
    assert set(rps) <= matching - forbidden
    assert len({a['attach_handle_uuid'] for a in bound.values()}) == MATCHING

    # The database agrees: each handle in use held by exactly one ARQ,
    # only the bound ones hold one, the others untouched.
    handles = _handles_in_db(dep)
    in_use = {h for h, row in handles.items() if row.in_use}
    rows = _arqs_in_db(dep, uuids)
    holders = {}
    for arq_uuid, row in rows.items():
        assert row.scheduled
        if row.attach_handle_id is not None:
            holders.setdefault(row.attach_handle_id, []).append(arq_uuid)
    assert set(holders) == in_use, (holders, in_use)
    assert all(len(held) == 1 for held in holders.values()), holders
    assert {u for held in holders.values() for u in held} == set(bound)
    assert {handles[h].rp_uuid for h in in_use} == set(rps)

    # Both conductors scheduled some, each outcome logged once.
    logged = {}
    for name in dep.conductor_names:
        text = dep.services[name].read_log(offsets[name])
        logged[name] = set(re.findall(
            r'Scheduling ARQ ([0-9a-f-]{36}) for consumer', text))
    assert all(logged.values()), {n: len(s) for n, s in logged.items()}
    assert sorted(u for s in logged.values() for u in s) == sorted(uuids)
    print('%d schedules resolved in %.1f s; accepted per conductor: %s'
          % (REQUESTS, elapsed, {n: len(s) for n, s in logged.items()}))

    # Unbinding gives every handle back.
    dep.call('PATCH', '/v2/accelerator_requests', {u: [
        {'op': 'remove', 'path': '/hostname'},
        {'op': 'remove', 'path': '/device_rp_uuid'},
        {'op': 'remove', 'path': '/instance_uuid'}] for u in uuids},
        expected=202)
    after = arq_states.arqs_by_uuid(dep, uuids)
    assert {a['state'] for a in after.values()} == {'Unbound'}
    assert not any(row.in_use for row in _handles_in_db(dep).values())
    wait_for(lambda: not _pending_releases(dep), timeout=60,
             message='Releases never confirmed by the agent')
    dep.call('DELETE', '/v2/accelerator_requests?arqs=%s' % ','.join(uuids),
             expected=204)


def _pending_releases(dep):
    with dep.engine.connect() as conn:
        return conn.execute(sa.text(
            'SELECT count(*) FROM attach_handles '
            'WHERE release_pending = true')).scalar()
