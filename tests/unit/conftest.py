import pytest

from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api


@pytest.fixture
def sqlite_db(tmp_path):
    """A fresh, empty SQLite database behind the conductor's db layer."""
    url = 'sqlite:///%s' % (tmp_path / 'unit.sqlite')
    CONF.set_override('connection', url, group='database')
    db_api.dispose()
    try:
        yield url
    finally:
        db_api.dispose()
        CONF.clear_override('connection', group='database')


@pytest.fixture
def migrated_db(sqlite_db):
    from cyborg_like.db import migration
    migration.upgrade()
    return sqlite_db
