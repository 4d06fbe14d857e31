"""A COMMIT that fails as a lost connection does (a Galera node killed as
it committed), after being carried out or not: at the lowest layer, the
dialect's ``do_commit``, so the real transaction code runs."""

import sqlite3

from oslo_db.sqlalchemy import exc_filters
import sqlalchemy as sa

INJECTED = 'connection lost during COMMIT (injected)'


def install(engine, monkeypatch, decide):
    """From now on each COMMIT on ``engine`` asks ``decide()``: None,
    commit as usual; True, commit then fail; False, fail uncommitted."""
    dialect = engine.dialect
    real = dialect.do_commit

    def do_commit(dbapi_connection):
        carried_out = decide()
        if carried_out is None:
            return real(dbapi_connection)
        if carried_out:
            real(dbapi_connection)
        raise sqlite3.OperationalError(INJECTED)

    def disconnect(ctx):
        if INJECTED in str(ctx.original_exception):
            ctx.is_disconnect = True

    monkeypatch.setattr(dialect, 'do_commit', do_commit)
    # Ahead of oslo.db's filter, which maps a disconnect to
    # DBConnectionError (as it does MariaDB's 2013 for real).
    sa.event.remove(engine, 'handle_error', exc_filters.handler)
    sa.event.listen(engine, 'handle_error', disconnect)
    sa.event.listen(engine, 'handle_error', exc_filters.handler,
                    retval=True)
