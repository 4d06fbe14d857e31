"""Migration 0025 (usage records): no foreign key ties a record to an ARQ
or a device, and a binding held at the upgrade is counted from it on."""

import datetime

import sqlalchemy as sa
import yaml

from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import arqs
from cyborg_like.db import device_profiles
from cyborg_like.db import inventory
from cyborg_like.db import migration
from cyborg_like.db import models
from cyborg_like.db import usage
from cyborg_like.drivers import fake

HOST = 'upgrade-1.example.org'
INVENTORY = {'devices': [
    {'type': 'GPU', 'vendor': '0x10de', 'model': 'A100',
     'pci_address': '0000:3b:00.0',
     'deployables': [{'name': 'gpu0', 'attributes': {'rc': 'PGPU'},
                      'pci_functions': ['0000:3b:00.0']}]}]}


def test_usage_tables_have_no_foreign_keys(migrated_db):
    inspector = sa.inspect(sa.create_engine(migrated_db))
    for table in ('usage_records', 'usage_carried'):
        assert inspector.get_foreign_keys(table) == []


def _bound_arq():
    """An ARQ of project p1 Bound to the host's GPU, as 0024 keeps it."""
    device_profiles.create('gpu', [{'resources:PGPU': '1'}], None)
    uuid = arqs.create('gpu', 'p1')[0]['uuid']
    with db_api.writer() as session:
        deployable = session.scalar(sa.select(models.Deployable.id))
        session.execute(sa.update(models.ExtARQ).values(
            state='Bound', deployable_id=deployable, hostname=HOST,
            instance_uuid='1ea5e000-0000-4000-8000-000000000001'))
    return uuid


def _report(tmp_path):
    """The host's GPU, as its agent's fake driver reports it."""
    path = tmp_path / 'inventory.yaml'
    path.write_text(yaml.safe_dump(INVENTORY))
    CONF.set_override('inventory_file', str(path), group='fake_driver')
    try:
        found = fake.FakeDriver(CONF).discover()
    finally:
        CONF.clear_override('inventory_file', group='fake_driver')
    inventory.reconcile(HOST, [d.to_dict() for d in found], 'h0')


def test_a_binding_held_at_the_upgrade_counts_from_it(sqlite_db, tmp_path):
    migration.upgrade('0024')
    _report(tmp_path)
    uuid = _bound_arq()
    before = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)
    migration.upgrade('0025')
    with db_api.reader() as session:
        [record] = session.scalars(sa.select(models.UsageRecord)).all()
    assert (record.arq_uuid, record.project_id, record.resource_class,
            record.model, record.hostname, record.released_at) == (
        uuid, 'p1', 'PGPU', 'A100', HOST, None)
    assert record.bound_at >= before
    # Its unbind closes it, as any binding's.
    arqs.unbind([uuid])
    with db_api.reader() as session:
        assert session.scalar(sa.select(
            models.UsageRecord.released_at)) is not None
    assert usage.counter_totals().keys() == {('p1', 'PGPU', 'A100')}
