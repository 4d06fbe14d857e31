"""cyborg-like-dbsync on MariaDB and PostgreSQL: from an empty database to
the newest schema, which must be exactly what the models describe.
(SQLite is covered by the functional tests.)
"""

import os
import subprocess
import sys

from alembic import autogenerate
from alembic import migration as alembic_migration
import pytest
import sqlalchemy as sa

from cyborg_like.db import migration

pytestmark = pytest.mark.integration

BIN = os.path.dirname(sys.executable)


def _dbsync(config_file, *args):
    proc = subprocess.run(
        [os.path.join(BIN, 'cyborg-like-dbsync'), '--config-file',
         config_file] + list(args), capture_output=True, text=True,
        timeout=120)
    assert proc.returncode == 0, (
        'cyborg-like-dbsync %s exited with %d:\n%s%s'
        % (' '.join(args), proc.returncode, proc.stdout, proc.stderr))
    return proc.stdout.strip()


def test_upgrade_from_empty_matches_models(empty_database, tmp_path):
    from cyborg_like.db import models

    backend, url = empty_database
    config_file = tmp_path / 'dbsync.conf'
    # dbsync needs no broker; only the database is real here.
    config_file.write_text('[DEFAULT]\ntransport_url = fake:/\n'
                           '[database]\nconnection = %s\n' % url)
    # The one tests/unit/test_migrations.py shows `alembic heads` reports.
    head = migration.head()

    assert _dbsync(config_file, 'version').startswith('empty')
    assert _dbsync(config_file, 'upgrade') == \
        'Database is at revision %s' % head
    assert _dbsync(config_file, 'version') == head
    # Upgrading a database that is at head changes nothing.
    assert _dbsync(config_file, 'upgrade') == \
        'Database is at revision %s' % head

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            context = alembic_migration.MigrationContext.configure(
                conn, opts={'compare_type': True,
                            'compare_server_default': True})
            assert context.get_current_revision() == head
            diff = autogenerate.compare_metadata(context,
                                                 models.Base.metadata)
            tables = set(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()
    assert diff == [], 'On %s the migrated schema differs from the ' \
        'models:\n%s' % (backend, '\n'.join(map(repr, diff)))
    assert tables == set(models.Base.metadata.tables) | {'alembic_version'}
