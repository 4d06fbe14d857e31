"""Why a device is drained (db/drain_reasons.py): one query a page, the
operation types it knows are the ones that drain, and the API's view of
an older conductor's devices."""

from cyborg_like.api.controllers.v2 import devices as devices_api
from cyborg_like.db import api as db_api
from cyborg_like.db import devices
from cyborg_like.db import drain_reasons
from cyborg_like.db import firmware
from cyborg_like.db import mig_layouts
from cyborg_like.db import models
from tests.unit.test_db_inventory import count_queries


def test_the_draining_types_are_those_of_the_operations():
    assert set(drain_reasons.DRAINING_TYPES) == {firmware.TYPE,
                                                 mig_layouts.TYPE}


def _fleet(count):
    with db_api.writer() as session:
        for number in range(count):
            uuid = 'dev-%d' % number
            session.add(models.Device(
                uuid=uuid, type='FPGA', vendor='0x8086', model='N3000',
                hostname='h1', status='maintaining', drained_by='drv',
                drain_reason='why', service_state='drained'))
            session.add(models.Operation(
                uuid='op-%d' % number, type='firmware', target_uuid=uuid,
                state='failed'))


def _page(limit):
    with count_queries() as queries:
        found = devices.list_devices({}, limit)
    return found, queries['n']


def test_a_page_costs_two_queries_whatever_its_size(migrated_db):
    _fleet(30)
    small, small_queries = _page(3)
    large, large_queries = _page(30)
    assert small_queries == large_queries == 2
    assert len(large) == 30
    assert [r['cause'] for r in large[7]['drain_reasons']] == [
        'driver_operation', 'firmware', 'health']
    assert large[7]['drain_reasons'][1]['operation_uuid'] == 'op-7'


def test_a_page_with_nothing_maintaining_costs_one(migrated_db):
    with db_api.writer() as session:
        session.add(models.Device(uuid='d', type='GPU', vendor='0x10de',
                                  model='T4', hostname='h1'))
    found, queries = _page(10)
    assert queries == 1
    assert found[0]['drain_reasons'] == []


def test_an_older_conductor_shows_its_driver_operations_drains():
    """Before conductor RPC 1.26 a device dict has no drain_reasons."""
    older = {'drained_by': 'op-1', 'drain_reason': 'Driver operation op-1 '
             'in progress.'}
    assert devices_api._drain(older) == {'drained': True, 'drain_reasons': [
        {'cause': 'driver_operation', 'operation_uuid': 'op-1',
         'reason': 'Driver operation op-1 in progress.'}]}
    assert devices_api._drain({'drained_by': None}) == {
        'drained': False, 'drain_reasons': []}
