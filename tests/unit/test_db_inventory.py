"""The conductor's database layer: reconcile, lists, queries per list."""

import contextlib
import types

import pytest
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import inventory as wire
from cyborg_like.conductor import drain_breaker
from cyborg_like.db import api as db_api
from cyborg_like.db import deployables
from cyborg_like.db import devices
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import models

# [health] as configured by default.
HEALTH = types.SimpleNamespace(auto_drain=True, recovery_checks=3,
                               breaker_window=3600, max_drains_per_host=4,
                               max_drains=50)


def _gpu(n, handles=1):
    address = '0000:%02x:00.0' % n
    return {
        'type': 'GPU', 'vendor': '0x10de', 'model': 'GPU%d' % n,
        'controlpath_id': {'cpid_type': 'PCI',
                           'cpid_info': wire.pci_address_info(address)},
        'deployables': [{
            'name': 'gpu0', 'num_accelerators': handles,
            'driver_name': 'fake', 'attributes': {'rc': 'PGPU'},
            'attach_handles': [
                {'attach_type': 'PCI',
                 'attach_info': wire.pci_address_info(
                     '0000:%02x:00.%d' % (n, f))}
                for f in range(handles)]}],
    }


def _apply(host, devs):
    return inventory.reconcile(host, devs, wire.fingerprint(devs))


def _all(host=None):
    filters = {'hostname': host} if host else {}
    return devices.list_devices(filters, 1000)


@contextlib.contextmanager
def count_queries():
    counter = {'n': 0, 'statements': []}

    def _count(conn, cursor, statement, *args):
        # Count data statements; not BEGIN, nor oslo.db's "SELECT 1" ping.
        words = statement.split(None, 1)
        if words[0].upper() in ('SELECT', 'INSERT', 'UPDATE', 'DELETE') \
                and statement.strip().upper() != 'SELECT 1':
            counter['n'] += 1
            counter['statements'].append(statement)

    engine = db_api.get_engine()
    sa.event.listen(engine, 'before_cursor_execute', _count)
    try:
        yield counter
    finally:
        sa.event.remove(engine, 'before_cursor_execute', _count)


def test_reconcile_adds_then_is_idempotent(migrated_db):
    summary = _apply('h1', [_gpu(1), _gpu(2)])
    assert summary == {'added': 2, 'updated': 0, 'removed': 0,
                       'kept_in_use': 0}
    first = {d['model']: d['uuid'] for d in _all()}
    summary = _apply('h1', [_gpu(1), _gpu(2)])
    assert summary == {'added': 0, 'updated': 0, 'removed': 0,
                       'kept_in_use': 0}
    assert {d['model']: d['uuid'] for d in _all()} == first


def test_reconcile_updates_in_place_and_removes(migrated_db):
    _apply('h1', [_gpu(1), _gpu(2)])
    before = {d['model']: d['uuid'] for d in _all()}
    changed = _gpu(1, handles=2)
    changed['deployables'][0]['attributes']['trait0'] = 'CUSTOM_X'
    summary = _apply('h1', [changed])
    assert summary['updated'] == 1 and summary['removed'] == 1
    after = _all()
    assert [d['uuid'] for d in after] == [before['GPU1']]
    dep = deployables.list_deployables({}, 10)[0]
    assert dep['num_accelerators'] == 2
    assert dep['attributes_list'] == \
        '[{"rc": "PGPU"}, {"trait0": "CUSTOM_X"}]'


def test_hosts_do_not_see_each_others_devices(migrated_db):
    _apply('h1', [_gpu(1)])
    _apply('h2', [_gpu(1)])             # same PCI address, other host
    _apply('h1', [])
    assert [d['hostname'] for d in _all()] == ['h2']


def test_invalid_report_changes_nothing(migrated_db):
    _apply('h1', [_gpu(1)])
    bad = [_gpu(1), _gpu(2)]
    del bad[1]['model']
    with pytest.raises(exception.InvalidInventory):
        _apply('h1', bad)
    assert [d['model'] for d in _all()] == ['GPU1']


def test_failure_mid_reconcile_leaves_no_half_state(migrated_db):
    _apply('h1', [_gpu(1)])
    # A handle listed twice passes the schema but breaks a unique
    # constraint in the middle of the transaction.
    bad = _gpu(2, handles=1)
    bad['deployables'][0]['attach_handles'] *= 2
    with pytest.raises(Exception):
        _apply('h1', [_gpu(3), bad])
    assert [d['model'] for d in _all()] == ['GPU1']
    assert len(deployables.list_deployables({}, 10)) == 1


def _ingest(beats, retention):
    return heartbeats.ingest(beats, retention,
                             drain_breaker.DrainBreaker(HEALTH))


def _beat(host, health=(), when=None):
    return {'host': host, 'agent_version': '1.0', 'inventory_hash': None,
            'health': list(health), 'received_at': when or hosts.utcnow()}


def test_inventory_hash_and_heartbeat(migrated_db):
    stored, _, _ = _ingest([_beat('h1')], retention=60)
    assert stored == {'h1': None}
    devs = [_gpu(1)]
    _apply('h1', devs)
    stored, _, _ = _ingest([_beat('h1'), _beat('h2')], retention=60)
    assert stored == {'h1': wire.fingerprint(devs), 'h2': None}
    listed = hosts.list_hosts(down_after=60)
    assert [(h['hostname'], h['state']) for h in listed] == [
        ('h1', 'up'), ('h2', 'up')]


def _reading(n, healthy=True, gpu=50):
    return {'controlpath_id': _gpu(n)['controlpath_id'], 'healthy': healthy,
            'reasons': [] if healthy else ['2 uncorrectable ECC errors'],
            'utilization': {'gpu_percent': gpu}}


def test_health_flips_are_reported_once_and_history_kept(migrated_db):
    _apply('h1', [_gpu(1), _gpu(2)])
    _, changed, _ = _ingest(
        [_beat('h1', [_reading(1), _reading(2)])], retention=60)
    assert sorted(c[2] for c in changed) == ['healthy', 'healthy']
    _, changed, _ = _ingest(
        [_beat('h1', [_reading(1, gpu=70), _reading(2, healthy=False)])],
        retention=60)
    assert [(c[2], c[3]) for c in changed] == [
        ('unhealthy', ['2 uncorrectable ECC errors'])]
    gpu1 = next(d for d in _all() if d['model'] == 'GPU1')
    health = heartbeats.device_health(gpu1['uuid'], history_limit=10)
    assert health['health'] == 'healthy'
    assert health['utilization'] == {'gpu_percent': 70}
    assert [h['utilization']['gpu_percent'] for h in health['history']] == \
        [70, 50]


def test_history_older_than_retention_is_dropped(migrated_db):
    _apply('h1', [_gpu(1)])
    old = hosts.utcnow().replace(year=2000)
    _ingest([_beat('h1', [_reading(1)], when=old)], retention=60)
    _ingest([_beat('h1', [_reading(1, gpu=9)])], retention=60)
    uuid = _all()[0]['uuid']
    history = heartbeats.device_health(uuid, 10)['history']
    assert [h['utilization']['gpu_percent'] for h in history] == [9]


@pytest.mark.parametrize('hosts_count', [2, 30])
def test_heartbeat_batches_cost_the_same_queries(migrated_db, hosts_count):
    for n in range(hosts_count):
        _apply('h%d' % n, [_gpu(1), _gpu(2)])
    batch = [_beat('h%d' % n, [_reading(1), _reading(2)])
             for n in range(hosts_count)]
    with count_queries() as queries:
        _ingest(batch, retention=60)
    # Hosts (select, update, select hashes), devices (select), health
    # (update, insert: one executemany each), hosts whose devices' health
    # changed marked for the Placement sync (update) and the availability
    # feed (insert), pruning (delete); the read model's generation of the
    # devices (update, select).
    assert queries['n'] <= 11, queries['statements']


def test_host_without_recent_heartbeat_is_down(migrated_db):
    _ingest([_beat('h1')], retention=60)
    with db_api.writer() as session:
        from cyborg_like.db import models
        session.execute(sa.update(models.Host).values(
            last_heartbeat=hosts.utcnow().replace(year=2000)))
    assert hosts.list_hosts(down_after=60)[0]['state'] == 'down'


def test_pagination_walks_every_device_once(migrated_db):
    _apply('h1', [_gpu(n) for n in range(1, 8)])
    seen, marker = [], None
    while True:
        page = devices.list_devices({}, 3, marker, 'model', 'desc')
        seen += [d['model'] for d in page]
        if len(page) < 3:
            break
        marker = page[-1]['uuid']
    assert seen == ['GPU%d' % n for n in range(7, 0, -1)]


def test_unknown_marker(migrated_db):
    with pytest.raises(exception.MarkerNotFound):
        devices.list_devices({}, 3, '9d6a5d5b-2a4a-4c2e-8a3a-3b1f1f1f1f1f')


@pytest.mark.parametrize('count', [2, 40])
def test_lists_cost_the_same_queries_whatever_their_length(migrated_db,
                                                          count):
    _apply('h1', [_gpu(n, handles=2) for n in range(1, count + 1)])
    with count_queries() as devices_queries:
        assert len(devices.list_devices({}, 1000)) == count
    with count_queries() as deployables_queries:
        assert len(deployables.list_deployables({}, 1000)) == count
    with count_queries() as reconcile_queries:
        _apply('h1', [_gpu(n, handles=2) for n in range(1, count + 1)])
    # One SELECT for the page (deployables: plus one for attributes), and
    # a fixed number for re-applying an unchanged inventory.
    assert devices_queries['n'] == 1, devices_queries['statements']
    assert deployables_queries['n'] == 2, deployables_queries['statements']
    assert reconcile_queries['n'] <= 8, reconcile_queries['statements']


def test_hosts_are_listed_in_pages_with_their_drained_devices(migrated_db):
    for n in range(5):
        _apply('h%d' % n, [_gpu(1)])
    with db_api.writer() as session:
        session.execute(sa.update(models.Device).where(
            models.Device.hostname.in_(['h1', 'h3'])).values(
            drained_by='op-1', drain_reason='a driver change'))
    pages, marker = [], None
    while True:
        page = hosts.list_hosts(60, limit=2, marker=marker)
        pages.append([(h['hostname'], len(h['drained_devices']))
                      for h in page])
        if len(page) < 2:
            break
        marker = page[-1]['hostname']
    assert pages == [[('h0', 0), ('h1', 1)], [('h2', 0), ('h3', 1)],
                     [('h4', 0)]]
