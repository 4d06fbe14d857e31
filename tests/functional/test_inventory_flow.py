"""Agent -> conductor -> database, in one process over the fake transport."""

import datetime

import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests.functional import cloud as cloud_module


def _by_model(devices):
    return {d['model']: d for d in devices}


def test_changes_reach_the_database_and_keep_uuids(tmp_path):
    path = cloud_module.inventory_copy(tmp_path)
    cloud = cloud_module.Cloud(inventory_file=str(path)).start()
    try:
        before = _by_model(cloud.list_devices())
        assert set(before) == {'PAC N3000', 'A100', 'T4'}

        def change(devices):
            devices[:] = [d for d in devices if d['model'] != 'T4']
            devices[0]['deployables'][1]['bitstream_id'] = 'bs-1'
            devices.append({'type': 'GPU', 'vendor': '0x10de',
                            'model': 'H100', 'pci_address': '0000:3b:00.0',
                            'deployables': [{'name': 'gpu0',
                                             'pci_functions': [
                                                 '0000:3b:00.0']}]})
        cloud_module.rewrite_inventory(path, change)
        assert cloud.services[1].tracker.update_inventory()

        after = _by_model(cloud.list_devices())
        assert set(after) == {'PAC N3000', 'A100', 'H100'}
        for model in ('PAC N3000', 'A100'):
            assert after[model]['uuid'] == before[model]['uuid']
        regions = cloud.conductor_api.list_deployables(
            context.get_admin_context(), {'name': 'region1'}, 10, None,
            'created_at', 'asc')
        assert [r['bitstream_id'] for r in regions] == ['bs-1']
    finally:
        cloud.stop()


def test_unchanged_inventory_is_not_sent_again(cloud):
    tracker = cloud.services[1].tracker
    assert tracker.update_inventory() is False
    assert tracker.update_inventory(force=True) is True
    assert len(cloud.list_devices()) == 3


def test_heartbeat_records_the_host(cloud):
    cloud.services[1].tracker.heartbeat()
    # Heartbeats are written in batches ([conductor] heartbeat_flush_interval).
    hosts = cloud.wait_for(lambda: [
        h for h in cloud.conductor_api.list_hosts(
            context.get_admin_context()) if h['agent_version']])
    assert [h['hostname'] for h in hosts] == [cloud_module.HOST]
    assert hosts[0]['state'] == 'up'
    assert hosts[0]['agent_version'] == '1.2'
    assert hosts[0]['last_heartbeat'] is not None


def test_conductor_asks_for_inventory_it_lost(cloud):
    # The conductor's copy is gone (say, a database restored from an old
    # backup); the agent still thinks it reported. A heartbeat repairs it.
    with db_api.writer() as session:
        session.execute(sa.delete(models.Device))
        session.execute(sa.update(models.Host).values(inventory_hash=None))
    assert cloud.list_devices() == []
    cloud.services[1].tracker.heartbeat()
    devices = cloud.wait_for(cloud.list_devices)
    assert len(devices) == 3


def test_the_periodic_beat_goes_by_the_stream_and_repairs_too(cloud):
    """The agent's periodic beat ([agent] heartbeat_delivery = stream,
    the default) reaches the conductor through the heartbeat stream:
    written with the next flush, and a lost inventory asked for again."""
    assert CONF.agent.heartbeat_delivery == 'stream'
    admin = context.get_admin_context()
    with db_api.writer() as session:
        session.execute(sa.delete(models.Device))
        session.execute(sa.update(models.Host).values(
            inventory_hash=None,
            last_heartbeat=datetime.datetime(2000, 1, 1)))
    cloud.services[1].tracker.regular_heartbeat()
    devices = cloud.wait_for(cloud.list_devices)
    assert len(devices) == 3
    [host] = cloud.conductor_api.list_hosts(admin)
    assert host['last_heartbeat'] > '2001'


def test_in_use_devices_are_kept_when_they_vanish(tmp_path):
    path = cloud_module.inventory_copy(tmp_path)
    cloud = cloud_module.Cloud(inventory_file=str(path)).start()
    try:
        with db_api.writer() as session:
            session.execute(sa.update(models.AttachHandle).values(
                in_use=True))
        cloud_module.rewrite_inventory(path, lambda devices: devices.clear())
        assert cloud.services[1].tracker.update_inventory()
        assert len(cloud.list_devices()) == 3
    finally:
        cloud.stop()
