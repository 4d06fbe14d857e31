"""Migrations from empty give exactly the models' schema (SQLite here;
MariaDB and PostgreSQL in tests/integration)."""

import os
import subprocess
import sys

from alembic import autogenerate
from alembic import migration as alembic_migration
import sqlalchemy as sa

from cyborg_like.db import migration
from cyborg_like.db import models


def test_upgrade_from_empty_matches_models(sqlite_db):
    assert migration.version() is None
    migration.upgrade()
    assert migration.version() == migration.head()
    engine = sa.create_engine(sqlite_db)
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        diff = autogenerate.compare_metadata(context, models.Base.metadata)
    assert diff == []


def test_head_is_the_one_alembic_reports():
    # What an operator's ``alembic heads`` says: one head (no branch two
    # migrations forked), and the one dbsync upgrades to.
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'alembic'), '-c',
         migration._INI, 'heads'], capture_output=True, text=True,
        check=True, timeout=60)
    assert proc.stdout.split() == [migration.head(), '(head)']


def test_each_revision_upgrades_in_turn(sqlite_db):
    migration.upgrade('0001')
    assert migration.version() == '0001'
    migration.upgrade()
    assert migration.version() == migration.head()


def test_upgrade_is_idempotent(sqlite_db):
    migration.upgrade()
    migration.upgrade()
    assert migration.version() == migration.head()
