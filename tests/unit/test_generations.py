"""Generations of the read model's families: bumped in the transaction of
every change, announced after its commit, snapshots exact
(db/generations.py, db/snapshots.py)."""

import types

import pytest
import sqlalchemy as sa

from cyborg_like.common import inventory as wire
from cyborg_like.conductor import drain_breaker
from cyborg_like.db import api as db_api
from cyborg_like.db import arqs
from cyborg_like.db import attributes
from cyborg_like.db import deployables
from cyborg_like.db import device_profiles
from cyborg_like.db import devices
from cyborg_like.db import generations
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import snapshots
from cyborg_like.db import models
from tests.unit.test_db_inventory import HEALTH


def _gpu(n):
    return {
        'type': 'GPU', 'vendor': '0x10de', 'model': 'GPU%d' % n,
        'controlpath_id': {'cpid_type': 'PCI', 'cpid_info':
                           wire.pci_address_info('0000:%02x:00.0' % n)},
        'deployables': [{
            'name': 'gpu0', 'num_accelerators': 1, 'driver_name': 'fake',
            'attributes': {'rc': 'PGPU'},
            'attach_handles': [{'attach_type': 'PCI', 'attach_info':
                                wire.pci_address_info('0000:%02x:00.0' % n)}]
        }],
    }


def _report(host, devs):
    return inventory.reconcile(host, devs, wire.fingerprint(devs))


def _now():
    with db_api.reader() as session:
        return generations.current(session)


@pytest.fixture
def announced(migrated_db):
    heard = []
    generations.subscribe(heard.append)
    yield heard
    generations.unsubscribe(heard.append)


def test_each_change_bumps_its_family_and_is_announced(announced):
    start = _now()
    assert start == {'devices': 0, 'deployables': 0, 'device_profiles': 0,
                     'arqs': 0}
    _report('h1', [_gpu(1), _gpu(2)])
    after_report = _now()
    assert after_report['devices'] > 0 and after_report['deployables'] > 0
    assert after_report['device_profiles'] == 0
    # Attach handles are what ARQ answers show of a binding.
    assert after_report['arqs'] > 0
    assert announced[-1] == {'devices': after_report['devices'],
                             'deployables': after_report['deployables'],
                             'arqs': after_report['arqs']}

    device = devices.list_devices({}, 10)[0]
    devices.set_status(device['uuid'], 'maintaining')
    assert _now()['devices'] == after_report['devices'] + 1
    assert announced[-1] == {'devices': after_report['devices'] + 1}

    dep = deployables.list_deployables({}, 10)[0]
    created = attributes.create(dep['id'], 'trait9', 'CUSTOM_X')
    assert _now()['deployables'] == after_report['deployables'] + 1
    attributes.delete(created['uuid'])
    assert _now()['deployables'] == after_report['deployables'] + 2

    device_profiles.create('p1', [{'resources:PGPU': '1'}])
    device_profiles.delete(names=['p1'])
    assert _now()['device_profiles'] == 2
    assert announced[-1] == {'device_profiles': 2}


def _ingest(healthy, utilization, policy=HEALTH):
    reading = {'controlpath_id': _gpu(1)['controlpath_id'],
               'healthy': healthy, 'reasons': [] if healthy else ['Xid 79'],
               'utilization': {'gpu': utilization}}
    heartbeats.ingest([{'host': 'h1', 'agent_version': '1.0',
                        'inventory_hash': None, 'health': [reading],
                        'received_at': hosts.utcnow()}], 10,
                      drain_breaker.DrainBreaker(policy))


def _served(uuid):
    return devices.get_device(uuid)


def test_readings_change_nothing_served_and_bump_nothing(announced):
    # A flush every second must not make every API process re-read every
    # device: the readings are not in what the copies serve.
    _report('h1', [_gpu(1)])
    uuid = devices.list_devices({}, 10, None, 'created_at', 'asc')[0]['uuid']
    _ingest(healthy=True, utilization=1)    # its first health: a change
    before, served = _now(), _served(uuid)
    del announced[:]
    for load in (5, 70, 99):
        _ingest(healthy=True, utilization=load)
    assert _now() == before
    assert _served(uuid) == served
    assert announced == []


def test_arq_writes_bump_arqs(announced):
    _report('h1', [_gpu(1)])
    device_profiles.create('p1', [{'resources:PGPU': '1'}])
    before = _now()
    created = arqs.create('p1', 'project')
    assert _now() == dict(before, arqs=before['arqs'] + 1)
    assert announced[-1] == {'arqs': before['arqs'] + 1}
    arqs.delete([a['uuid'] for a in created])
    assert _now()['arqs'] == before['arqs'] + 2


def test_a_change_of_health_bumps_arqs(announced):
    # ARQ answers show the health of the device an ARQ holds.
    _report('h1', [_gpu(1)])
    _ingest(healthy=True, utilization=1)
    before = _now()
    no_drains = types.SimpleNamespace(**dict(vars(HEALTH), auto_drain=False))
    _ingest(healthy=False, utilization=1, policy=no_drains)
    assert _now()['arqs'] == before['arqs'] + 1
    _ingest(healthy=False, utilization=2, policy=no_drains)
    assert _now()['arqs'] == before['arqs'] + 1


def test_a_drain_by_heartbeat_bumps_devices(announced):
    _report('h1', [_gpu(1)])
    before = _now()
    _ingest(healthy=False, utilization=0)
    assert _now()['devices'] == before['devices'] + 1
    assert _now()['deployables'] == before['deployables']


def test_reads_and_failed_writes_bump_nothing(announced):
    _report('h1', [_gpu(1)])
    before, heard = _now(), len(announced)
    devices.list_devices({}, 10)
    deployables.list_deployables({}, 10)
    device_profiles.create('p1', [{'resources:PGPU': '1'}])
    with pytest.raises(Exception):
        device_profiles.create('p1', [{'resources:PGPU': '1'}])
    with pytest.raises(RuntimeError):
        with db_api.writer() as session:
            session.add(models.DeviceProfile(
                uuid='5d0c4c3e-6a7e-4d36-8f0e-0a2b1c1d2e3f', name='p2',
                profile_json='{"groups": []}'))
            session.flush()
            raise RuntimeError('rolled back')
    assert _now() == dict(before, device_profiles=1)
    assert len(announced) == heard + 1


def test_a_vanished_device_bumps_the_deployables_it_took_along(announced):
    _report('h1', [_gpu(1), _gpu(2)])
    before = _now()
    _report('h1', [_gpu(1)])
    after = _now()
    assert after['devices'] > before['devices']
    assert after['deployables'] > before['deployables']


def test_deleting_a_device_alone_bumps_what_the_schema_takes_along(
        announced):
    # One DELETE FROM devices: the schema deletes its deployables and
    # handles, and ARQs holding one lose it (SET NULL).
    _report('h1', [_gpu(1)])
    before = _now()
    with db_api.writer() as session:
        session.execute(sa.delete(models.Device))
    after = _now()
    assert after['deployables'] == before['deployables'] + 1
    assert after['arqs'] == before['arqs'] + 1


def test_generations_outlive_the_engine(migrated_db):
    device_profiles.create('p1', [{'resources:PGPU': '1'}])
    db_api.dispose()        # as a conductor restarting
    device_profiles.create('p2', [{'resources:PGPU': '1'}])
    assert _now()['device_profiles'] == 2


def test_a_snapshot_holds_the_families_not_known_in_list_order(migrated_db):
    _report('h1', [_gpu(1), _gpu(2)])
    device_profiles.create('p1', [{'resources:PGPU': '1'}])
    full = snapshots.snapshot({})
    assert set(full['families']) == {'devices', 'deployables',
                                     'device_profiles'}
    assert full['families']['devices'] == devices.list_devices({}, 10)
    assert full['families']['deployables']['deployables'] == \
        deployables.list_deployables({}, 10)
    assert full['families']['deployables']['attributes'] == \
        attributes.list_attributes({}, 10)
    assert full['dialect'] == 'sqlite'
    again = snapshots.snapshot(full['generations'])
    assert again['families'] == {}
    assert again['generations'] == full['generations']
    device_profiles.create('p2', [{'resources:PGPU': '1'}])
    changed = snapshots.snapshot(full['generations'])
    assert list(changed['families']) == ['device_profiles']
    assert [p['name'] for p in changed['families']['device_profiles']] == \
        ['p1', 'p2']
