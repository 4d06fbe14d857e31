"""Standalone scheduling: POST /v2/accelerator_requests/<uuid>/schedule,
the conductor picking the deployable (docs/scheduling.md).

The whole service in one process (cloud.py). A second, agentless host
("ghost") is written into the database where a test needs more hosts
than the fake agent serves: its deployables are candidates the choice
can be seen to prefer or avoid, never bound to.
"""

import datetime
import json
import threading

import pytest
import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.common import states
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import inventory
from cyborg_like.db import models
from cyborg_like.db import scheduling
from cyborg_like.drivers import fake
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
HOST = cloud_module.HOST
GHOST = 'ghost-1.example.org'
PATH = '/v2/accelerator_requests'


def _card(address, regions, numa_node=None, model='PAC N3000'):
    """An FPGA card at PCI ``address`` (bus:device) with ``regions``."""
    board = {'device_id': '0x0b30'}
    if numa_node is not None:
        board['numa_node'] = numa_node
    return {'type': 'FPGA', 'vendor': '0x8086', 'model': model,
            'pci_address': '0000:%s.0' % address, 'std_board_info': board,
            'deployables': [
                {'name': 'region%d' % n,
                 'attributes': {'rc': 'FPGA',
                                'trait0': 'CUSTOM_FPGA_INTEL_N3000'},
                 'pci_functions': ['0000:%s.%d' % (address, n + 1)]}
                for n in range(regions)]}


TWO_CARDS = [_card('5e:00', 2, numa_node=0), _card('af:00', 2, numa_node=1)]


@pytest.fixture
def two_cards(tmp_path):
    """One host, two FPGA cards of two regions each (NUMA nodes 0, 1)."""
    path = cloud_module.inventory_copy(tmp_path)
    cloud_module.rewrite_inventory(path, lambda devices: devices.__setitem__(
        slice(None), TWO_CARDS))
    cloud = cloud_module.Cloud(inventory_file=str(path)).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def _add_ghost(entries, hostname=GHOST):
    """A host in the database only, up for a day, with ``entries`` (fake
    inventory entries) as its devices."""
    driver = fake.FakeDriver(CONF)
    inventory.reconcile(hostname, [driver._device(e).to_dict()
                                   for e in entries], 'ghost')
    with db_api.writer() as session:
        session.execute(sa.update(models.Host).where(
            models.Host.hostname == hostname).values(
                last_heartbeat=datetime.datetime.utcnow()
                + datetime.timedelta(days=1)))


def _profile(cloud, name, group):
    status, body = cloud.call('POST', '/v2/device_profiles',
                              {'name': name, 'groups': [group]})
    assert status == 201, body


def _arq(cloud, profile):
    status, body = cloud.call('POST', PATH, {'device_profile_name': profile})
    assert status == 201, body
    return body['arqs'][0]['uuid']


def _instance(n):
    return '5c4ed000-0000-4000-8000-%012d' % n


def _schedule(cloud, arq, instance, expected=202, **body):
    body['instance_uuid'] = instance
    status, shown = cloud.call('POST', '%s/%s/schedule' % (PATH, arq), body)
    assert status == expected, shown
    return shown


def _resolved(cloud, arq):
    def done():
        status, found = cloud.call('GET', '%s/%s' % (PATH, arq))
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(done)


def _scheduled(cloud, profile, n, **body):
    arq = _arq(cloud, profile)
    shown = _schedule(cloud, arq, _instance(n), **body)
    assert shown['state'] == states.BIND_STARTED
    assert shown['instance_uuid'] == _instance(n)
    return _resolved(cloud, arq)


def _deployables(cloud):
    """{rp_uuid: (device model or pci address, deployable name)}"""
    devices = {d['id']: d for d in cloud.list_devices()}
    return {d['rp_uuid']: (devices[d['device_id']]['model'], d['name'])
            for d in cloud.conductor_api.list_deployables(
                ADMIN, {}, 1000, None, 'created_at', 'asc')}


def _card_of(cloud, arq):
    """(card's PCI bus, region) an ARQ was bound to."""
    devices = {d['id']: d for d in cloud.list_devices()}
    for d in cloud.conductor_api.list_deployables(
            ADMIN, {}, 1000, None, 'created_at', 'asc'):
        if d['rp_uuid'] == arq['device_rp_uuid']:
            board = devices[d['device_id']]['std_board_info']
            if isinstance(board, str):
                board = json.loads(board)
            return board, d['name']
    raise AssertionError('no deployable %s' % arq['device_rp_uuid'])


def test_schedule_picks_a_matching_deployable(cloud):
    _profile(cloud, 'fpga', {'resources:FPGA': '1',
                             'trait:CUSTOM_FPGA_INTEL_N3000': 'required'})
    bound = _scheduled(cloud, 'fpga', 1)
    assert bound['state'] == states.BOUND, bound
    assert bound['hostname'] == HOST
    assert _deployables(cloud)[bound['device_rp_uuid']] in {
        ('PAC N3000', 'region0'), ('PAC N3000', 'region1')}
    assert bound['attach_handle_type'] == 'PCI'
    assert bound['attach_handle_info']['bus'] == '5e'


@pytest.mark.parametrize('value,model', [('required', 'T4'),
                                         ('forbidden', 'A100')])
def test_traits_are_honoured(cloud, value, model):
    _profile(cloud, 'gpu', {'resources:PGPU': '1',
                            'trait:CUSTOM_GPU_NVIDIA_T4': value})
    bound = _scheduled(cloud, 'gpu', 1)
    assert bound['state'] == states.BOUND, bound
    assert _deployables(cloud)[bound['device_rp_uuid']] == (model, 'gpu0')
    # The other GPU is never a candidate: with it taken, nothing is free.
    again = _scheduled(cloud, 'gpu', 2)
    assert again['state'] == states.BIND_FAILED
    assert 'No free deployable' in again['state_reason']


def test_nothing_free_fails_with_the_reason(cloud):
    _profile(cloud, 'fpga', {'resources:FPGA': '1'})
    first = [_scheduled(cloud, 'fpga', n) for n in (1, 2)]
    assert [a['state'] for a in first] == [states.BOUND] * 2
    assert len({a['device_rp_uuid'] for a in first}) == 2
    third = _scheduled(cloud, 'fpga', 3)
    assert third['state'] == states.BIND_FAILED
    assert third['state_reason'].startswith(
        'No free deployable matches the request'), third
    assert third['attach_handle_uuid'] is None
    # A missing trait, a resource class nobody offers: the same answer.
    _profile(cloud, 'nic', {'resources:NIC': '1'})
    nic = _scheduled(cloud, 'nic', 4)
    assert nic['state'] == states.BIND_FAILED
    assert 'No free deployable' in nic['state_reason']


def test_unbind_gives_the_device_to_the_next(cloud):
    _profile(cloud, 'gpu', {'resources:PGPU': '1',
                            'trait:CUSTOM_GPU_NVIDIA_T4': 'required'})
    first = _scheduled(cloud, 'gpu', 1)
    status, _ = cloud.call('PATCH', PATH, {first['uuid']: [
        {'op': 'remove', 'path': '/hostname'},
        {'op': 'remove', 'path': '/device_rp_uuid'},
        {'op': 'remove', 'path': '/instance_uuid'}]})
    assert status == 202
    # Waits out the agent's confirmation of the release.
    second = _scheduled(cloud, 'gpu', 2)
    assert second['state'] == states.BOUND, second
    assert second['device_rp_uuid'] == first['device_rp_uuid']
    # The unbound one may be scheduled again (and finds nothing free).
    again = _schedule(cloud, first['uuid'], _instance(3))
    assert again['state'] == states.BIND_STARTED
    assert _resolved(cloud, first['uuid'])['state'] == states.BIND_FAILED


@pytest.mark.parametrize('strategy,same_card', [('pack', True),
                                                ('spread', False)])
def test_pack_fills_a_card_spread_takes_another(two_cards, strategy,
                                                same_card):
    cloud = two_cards
    _profile(cloud, 'fpga', {'resources:FPGA': '1'})
    first = _scheduled(cloud, 'fpga', 1)
    second = _scheduled(cloud, 'fpga', 2,
                        preferences={'strategy': strategy})
    assert [first['state'], second['state']] == [states.BOUND] * 2
    board1, board2 = (_card_of(cloud, a)[0] for a in (first, second))
    assert (board1 == board2) is same_card, (board1, board2)


def test_numa_node_is_honoured(two_cards):
    cloud = two_cards
    _profile(cloud, 'fpga', {'resources:FPGA': '1'})
    for n in (1, 2):
        bound = _scheduled(cloud, 'fpga', n, preferences={'numa_node': 1})
        assert bound['state'] == states.BOUND, bound
        assert _card_of(cloud, bound)[0]['numa_node'] == 1
    full = _scheduled(cloud, 'fpga', 3, preferences={'numa_node': 1})
    assert full['state'] == states.BIND_FAILED
    assert 'on NUMA node 1' in full['state_reason']


def test_hostname_is_honoured(cloud):
    # The ghost host offers idle GPUs of both models: spread would prefer
    # it once the real host holds one.
    _add_ghost([{'type': 'GPU', 'vendor': '0x10de', 'model': 'T4',
                 'pci_address': '0000:3b:00.0',
                 'deployables': [{'name': 'gpu0', 'attributes': {
                     'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA_T4'},
                     'pci_functions': ['0000:3b:00.0']}]}])
    _profile(cloud, 'gpu', {'resources:PGPU': '1'})
    for n in (1, 2):
        bound = _scheduled(cloud, 'gpu', n, hostname=HOST,
                           preferences={'strategy': 'spread'})
        assert bound['state'] == states.BOUND, bound
        assert bound['hostname'] == HOST
    full = _scheduled(cloud, 'gpu', 3, hostname=HOST)
    assert full['state'] == states.BIND_FAILED
    assert 'on host %s' % HOST in full['state_reason']


def test_candidates_order_hosts_by_use(cloud):
    """Pack puts the busiest host first, spread the idlest; the ghost's
    GPU and the real host's (one of which is bound) compete."""
    _add_ghost([{'type': 'GPU', 'vendor': '0x10de', 'model': 'T4',
                 'pci_address': '0000:3b:00.0',
                 'deployables': [{'name': 'gpu0', 'attributes': {
                     'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA_T4'},
                     'pci_functions': ['0000:3b:00.0']}]}])
    _profile(cloud, 'gpu', {'resources:PGPU': '1'})
    bound = _scheduled(cloud, 'gpu', 1, hostname=HOST)
    assert bound['state'] == states.BOUND
    arq = _arq(cloud, 'gpu')
    attempt, _ = scheduling.start(arq, _instance(2))
    order = {strategy: [c['hostname'] for c in scheduling.candidates(
        arq, attempt, None, {'strategy': strategy}, 60)]
        for strategy in scheduling.STRATEGIES}
    assert order == {'pack': [HOST, GHOST], 'spread': [GHOST, HOST]}


def test_candidates_take_a_few_queries(cloud):
    """However many deployables, picking reads three times."""
    _add_ghost([_card('%02x:00' % bus, 4) for bus in range(16, 40)])
    _profile(cloud, 'fpga', {'resources:FPGA': '1',
                             'trait:CUSTOM_FPGA_INTEL_N3000': 'required'})
    arq = _arq(cloud, 'fpga')
    attempt, _ = scheduling.start(arq, _instance(1))
    statements = []
    engine = db_api.get_engine()
    caller = threading.get_ident()

    def count(conn, cursor, statement, *args):
        # The cloud's own threads (heartbeat flushes, periodic tasks) use
        # the engine meanwhile: only this call's statements count.
        if threading.get_ident() == caller:
            statements.append(statement)
    sa.event.listen(engine, 'before_cursor_execute', count)
    try:
        found = scheduling.candidates(arq, attempt, None, {}, 60)
    finally:
        sa.event.remove(engine, 'before_cursor_execute', count)
    assert len(found) == 24 * 4 + 2
    selects = [s for s in statements if s.lstrip().upper().startswith(
        'SELECT')]
    assert len(selects) <= 4, selects


def test_bad_requests(cloud):
    _profile(cloud, 'fpga', {'resources:FPGA': '1'})
    arq = _arq(cloud, 'fpga')
    for body in ({}, {'instance_uuid': 'not-a-uuid'},
                 {'instance_uuid': _instance(1), 'hostname': 'a b'},
                 {'instance_uuid': _instance(1),
                  'preferences': {'strategy': 'random'}},
                 {'instance_uuid': _instance(1),
                  'preferences': {'numa_node': -1}},
                 {'instance_uuid': _instance(1), 'device_rp_uuid': arq}):
        status, shown = cloud.call('POST', '%s/%s/schedule' % (PATH, arq),
                                   body)
        assert status == 400, (body, shown)
    status, _ = cloud.call('POST', '%s/%s/schedule' % (
        PATH, '00000000-0000-4000-8000-000000000000'),
        {'instance_uuid': _instance(1)})
    assert status == 404
    bound = _scheduled(cloud, 'fpga', 1)
    status, shown = cloud.call('POST', '%s/%s/schedule' % (
        PATH, bound['uuid']), {'instance_uuid': _instance(2)})
    assert status == 409, shown


def test_a_nova_instance_is_not_scheduled_for(cloud):
    """A consumer holding Nova-bound requests gets no standalone ones."""
    _profile(cloud, 'fpga', {'resources:FPGA': '1'})
    nova_arq = _arq(cloud, 'fpga')
    rp = next(rp for rp, (_, name) in _deployables(cloud).items()
              if name == 'region0')
    status, _ = cloud.call('PATCH', PATH, {nova_arq: [
        {'op': 'add', 'path': '/hostname', 'value': HOST},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
        {'op': 'add', 'path': '/instance_uuid', 'value': _instance(1)}]})
    assert status == 202
    status, shown = cloud.call('POST', '%s/%s/schedule' % (
        PATH, _arq(cloud, 'fpga')), {'instance_uuid': _instance(1)})
    assert status == 400, shown
    assert 'already has accelerator requests' in str(shown)
