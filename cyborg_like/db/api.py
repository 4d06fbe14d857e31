"""The conductor's handle on the database: transactions and pagination.

Every public function of the modules in this package is one transaction,
opened with ``reader()`` or ``writer()``, and returns plain dicts, never ORM
objects, so results can cross RPC as they are.
"""

import contextlib
import threading

from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import utils as db_utils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.conf import CONF
from cyborg_like.conf import opts

opts.set_lib_defaults(CONF)

_LOCK = threading.Lock()
_FACADE = None


@enginefacade.transaction_context_provider
class _Scope:
    """The holder enginefacade keeps the session of one transaction on."""


_LOCAL = threading.local()


def _facade():
    global _FACADE
    with _LOCK:
        if _FACADE is None:
            _FACADE = enginefacade.transaction_context()
            _FACADE.configure(sqlite_fk=True)
            engine = _FACADE.writer.get_engine()
            if engine.dialect.name == 'sqlite':
                _serialize_sqlite_writers(engine)
        return _FACADE


def reader():
    return _facade().reader.using(_Scope())


@contextlib.contextmanager
def writer():
    _LOCAL.writing = True
    try:
        with _facade().writer.using(_Scope()) as session:
            yield session
    finally:
        _LOCAL.writing = False


def _serialize_sqlite_writers(engine):
    """Make SQLite writers wait for each other instead of failing.

    A deferred SQLite transaction that reads and then writes fails at once
    with "database is locked" when another one already writes. Writers here
    begin IMMEDIATE (taking the write lock first, waiting up to 30 s for
    it); readers stay deferred. This replaces oslo.db's own BEGIN
    listener, keeping its "in_transaction" marker.
    """
    def _begin(conn):
        if 'in_transaction' not in conn.info:
            immediate = getattr(_LOCAL, 'writing', False)
            conn.exec_driver_sql('BEGIN IMMEDIATE' if immediate else 'BEGIN')
            conn.info['in_transaction'] = True

    def _connect(dbapi_con, record):
        dbapi_con.execute('PRAGMA busy_timeout = 30000')

    for listener in list(engine.dispatch.begin):
        sa.event.remove(engine, 'begin', listener)
    sa.event.listen(engine, 'begin', _begin)
    sa.event.listen(engine, 'connect', _connect)


def get_engine():
    return _facade().writer.get_engine()


def dispose():
    """Forget the engine, e.g. after [database] connection changed."""
    global _FACADE
    with _LOCK:
        if _FACADE is not None:
            _FACADE.dispose_pool()
        _FACADE = None


def paginate(session, query, model, limit, marker, sort_key, sort_dir):
    """One page of ``query``, ordered by ``sort_key`` then id.

    ``sort_key`` and ``sort_dir`` were validated by the API against
    common/listing.py; paginate_query refuses anything else.
    """
    marker_obj = None
    if marker is not None:
        marker_obj = session.scalars(
            sa.select(model).where(model.uuid == marker)).first()
        if marker_obj is None:
            raise exception.MarkerNotFound(marker=marker)
    sort_keys = [sort_key] if sort_key == 'id' else [sort_key, 'id']
    return db_utils.paginate_query(
        query, model, limit, sort_keys, marker=marker_obj,
        sort_dir=sort_dir)


def isotime(value):
    """Datetimes as Cyborg shows them: ISO 8601 in UTC."""
    if value is None:
        return None
    return value.replace(microsecond=0).isoformat() + '+00:00'
