"""Schema migrations with alembic, behind ``cyborg-like-dbsync``."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from cyborg_like.db import api

_INI = os.path.join(os.path.dirname(__file__), 'alembic.ini')


def _config(connection):
    cfg = alembic_config.Config(_INI)
    cfg.attributes['connection'] = connection
    return cfg


def upgrade(revision='head'):
    with api.get_engine().begin() as connection:
        command.upgrade(_config(connection), revision)


def version():
    """The revision the database is at, or None when it is empty."""
    with api.get_engine().connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()


def head():
    """The newest revision this code knows."""
    return alembic_script.ScriptDirectory.from_config(
        alembic_config.Config(_INI)).get_current_head()
