"""Conductors share the Placement sync through claims on hosts."""

import datetime

from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import placement_sync

HOST = 'compute-1'
MINUTE = datetime.timedelta(minutes=1)


def _host(migrated_db):
    inventory.reconcile(HOST, [], 'empty')
    placement_sync.mark_dirty_now([HOST])
    [(hostname, mark)] = placement_sync.hosts_to_sync()
    return mark


def test_a_held_claim_keeps_others_out_until_it_lapses(migrated_db):
    mark = _host(migrated_db)
    assert placement_sync.claim(HOST, mark, hosts.utcnow() + MINUTE)
    assert not placement_sync.claim(HOST, mark, hosts.utcnow() + MINUTE)
    # The holder died: its claim ran out.
    placement_sync.release(HOST, mark, synced=False)
    assert placement_sync.claim(HOST, mark, hosts.utcnow() - MINUTE)
    assert placement_sync.claim(HOST, mark, hosts.utcnow() + MINUTE)


def test_a_change_during_the_sync_keeps_the_host_marked(migrated_db):
    mark = _host(migrated_db)
    assert placement_sync.claim(HOST, mark, hosts.utcnow() + MINUTE)
    placement_sync.mark_dirty_now([HOST])
    placement_sync.release(HOST, mark, synced=True)
    [(hostname, new_mark)] = placement_sync.hosts_to_sync()
    assert new_mark != mark
    # A claim on what was read before the change is refused.
    assert not placement_sync.claim(HOST, mark, hosts.utcnow() + MINUTE)
    assert placement_sync.claim(HOST, new_mark, hosts.utcnow() + MINUTE)
    placement_sync.release(HOST, new_mark, synced=True)
    assert placement_sync.hosts_to_sync() == []


def test_start_up_marks_only_hosts_not_synced_lately(migrated_db):
    mark = _host(migrated_db)
    assert placement_sync.claim(HOST, mark, hosts.utcnow() + MINUTE)
    placement_sync.release(HOST, mark, synced=True)
    placement_sync.mark_unsynced_dirty(hosts.utcnow() - MINUTE)
    assert placement_sync.hosts_to_sync() == []
    placement_sync.mark_unsynced_dirty(hosts.utcnow() + MINUTE)
    assert placement_sync.hosts_to_sync() == [(HOST, 1)]
