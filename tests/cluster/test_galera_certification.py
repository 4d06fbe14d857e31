"""A Galera certification failure at COMMIT retries the whole transaction.

On Galera a conflicting write of another node is not a lock wait: the
transaction runs to its end on its own node and fails at COMMIT (error
1213, certification failed or brute-force aborted). cyborg_like's writes
that can meet one are wrapped in db/api.py's retry_on_deadlock, which must
see that failure as DBDeadlock and run the transaction again whole, never
half-applied. Here an inventory apply (db/inventory.py reconcile) on node
1 meets, just before its COMMIT, a heartbeat flush of the same host row
committed on node 2.
"""

import os

import sqlalchemy as sa
import yaml

from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import inventory
from cyborg_like.drivers import fake
from tests import arq_world


def _second_device():
    """arq_world's inventory and one more FPGA."""
    devices = [dict(d) for d in arq_world.INVENTORY['devices']]
    extra = dict(devices[0], pci_address='0000:5f:00.0', deployables=[
        {'name': 'region0', 'attributes': {'rc': 'FPGA'},
         'pci_functions': ['0000:5f:00.1']}])
    return {'devices': devices + [extra]}


def _reported(workdir, document):
    """The devices the fake driver reports for ``document``."""
    path = os.path.join(workdir, 'inventory2.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump(document, f)
    CONF.set_override('inventory_file', path, group='fake_driver')
    return [d.to_dict() for d in fake.FakeDriver(CONF).discover()]


def test_commit_conflict_is_retried_whole(clusters, workdir):
    with clusters.database() as url:
        world = arq_world.World().start(url(1), workdir)
        other = sa.create_engine(url(2), poolclass=sa.pool.NullPool)
        engine = db_api.get_engine()
        commits = []

        def conflict_before_commit(conn):
            # The first COMMIT of the apply: node 2 writes the same host
            # row first, so this transaction fails certification.
            commits.append(1)
            if len(commits) == 1:
                with other.begin() as conn2:
                    conn2.execute(sa.text(
                        'UPDATE hosts SET last_heartbeat = '
                        'last_heartbeat + INTERVAL 1 SECOND '
                        'WHERE hostname = :h'), {'h': arq_world.HOST})

        try:
            devices = _reported(workdir, _second_device())
            sa.event.listen(engine, 'commit', conflict_before_commit)
            try:
                summary = inventory.reconcile(arq_world.HOST, devices, 'h2')
            finally:
                sa.event.remove(engine, 'commit', conflict_before_commit)
            with other.connect() as conn:
                count = conn.execute(sa.text(
                    'SELECT COUNT(*) FROM devices')).scalar()
                inventory_hash = conn.execute(sa.text(
                    'SELECT inventory_hash FROM hosts')).scalar()
            print('\ncommits of the apply: %d' % len(commits))
            assert len(commits) == 2, 'the conflict was not retried'
            assert summary['added'] == 1, summary
            assert count == 2 and inventory_hash == 'h2'
        finally:
            other.dispose()
            world.stop()
