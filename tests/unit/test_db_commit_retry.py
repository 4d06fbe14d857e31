"""A deadlock raised at COMMIT, as Galera's certification failure is (1213
when another node committed the same rows first), rolls the transaction
back whole, and a write decorated with ``retry_on_deadlock`` runs again
whole: applied exactly once, never half. On a real three-node Galera
cluster (tools/cluster/galera-cluster.sh) the same 1213 comes out of
``writer()``'s COMMIT when a second node commits the same row between the
writer's statements and its COMMIT."""

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from cyborg_like.db import api as db_api
from cyborg_like.db import deployables
from cyborg_like.db import devices
from cyborg_like.db import inventory
from tests.unit.test_db_inventory import _gpu



@pytest.fixture
def certification_failures(migrated_db):
    """Make the next ``n`` COMMITs of the writer engine fail as Galera's
    certification does; yields a function setting ``n``."""
    engine = db_api.get_engine()
    left = [0]

    def _commit(conn):
        if left[0]:
            left[0] -= 1
            raise db_exc.DBDeadlock()

    sa.event.listen(engine, 'commit', _commit)
    try:
        yield lambda n: left.__setitem__(0, n)
    finally:
        sa.event.remove(engine, 'commit', _commit)


def test_inventory_lost_at_commit_is_applied_once(certification_failures):
    certification_failures(1)
    summary = inventory.reconcile('h1', [_gpu(1), _gpu(2)], 'hash-1')
    assert summary['added'] == 2
    assert sorted(d['model'] for d in devices.list_devices({}, 10)) == [
        'GPU1', 'GPU2']
    assert len(deployables.list_deployables({}, 10)) == 2


def test_a_write_lost_at_commit_leaves_nothing(certification_failures):
    # The transaction alone, without its retry: the caller sees the
    # deadlock and the database holds nothing of it.
    certification_failures(1)
    with pytest.raises(db_exc.DBDeadlock):
        inventory.reconcile.__wrapped__('h1', [_gpu(1)], 'hash-1')
    assert devices.list_devices({}, 10) == []
    assert deployables.list_deployables({}, 10) == []
