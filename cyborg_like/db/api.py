"""The conductor's handle on the database: transactions and pagination.

Every public function of the modules in this package is one transaction,
opened with ``reader()`` or ``writer()``, and returns plain dicts, never ORM
objects, so results can cross RPC as they are.
"""

import contextlib
import threading
import time

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import exc_filters
from oslo_log import log as logging
from oslo_db.sqlalchemy import utils as db_utils
import sqlalchemy as sa

from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.conf import CONF
from cyborg_like.conf import database as database_conf
from cyborg_like.conf import opts
from cyborg_like.db import change_recorder
from cyborg_like.db import generations

LOG = logging.getLogger(__name__)

opts.set_lib_defaults(CONF)
database_conf.register_opts(CONF)

# Writers racing for the same rows (two first requests of a project adding
# its quota row, binds and schedules taking the handles of one deployable,
# updating ARQs under the same secondary-index ranges) lock them in
# different orders: on MariaDB the loser's transaction dies in a deadlock
# (1213; 1 in 332 ARQ cycles of the compare bench, and some of 100
# concurrent schedules) and is simply run again whole. Only for functions
# that are one whole transaction.
retry_on_deadlock = oslo_db_api.wrap_db_retry(max_retries=5,
                                              retry_on_deadlock=True)

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
            # Kept only once its engine has our listeners: a failed first
            # connection leaves nothing half set up for the next call.
            facade = enginefacade.transaction_context()
            facade.configure(sqlite_fk=True)
            engine = _first_engine(facade)
            generations.track(engine)
            change_recorder.track(engine)
            if engine.dialect.name == 'sqlite':
                _serialize_sqlite_writers(engine)
            else:
                _bound_socket_waits(engine)
                _connect_failures_are_disconnects(engine)
            _FACADE = facade
        return _FACADE


def _first_engine(facade):
    try:
        return facade.writer.get_engine()
    except sa.exc.OperationalError as error:
        # oslo.db's first connection failed before the engine had our
        # listeners; see _connect_failures_are_disconnects.
        raise db_exc.DBConnectionError(error) from error


@contextlib.contextmanager
def _errors_mapped():
    """Database failures as our exceptions, which reach the API as a clean
    503 or 400; anything else crosses RPC as a RemoteError (a 500 whose
    details stay in this log)."""
    try:
        yield
    except db_exc.DBConnectionError as error:
        LOG.warning('The database is unreachable: %s', error)
        raise exception.ServiceUnavailable(
            'The database is unreachable; try again later.') from error
    except db_exc.DBDataError as error:
        # The API validates every value; one the database still refuses
        # is a gap in a schema, logged here and never shown.
        LOG.error('The database refused a value: %s', error)
        raise exception.Invalid(
            'A value of the request does not fit the database.') from error


@contextlib.contextmanager
def reader():
    with _errors_mapped(), _facade().reader.using(_Scope()) as session:
        yield session


@contextlib.contextmanager
def writer():
    _LOCAL.writing = True
    generations.begin()
    change_recorder.begin()
    bumped, committed = None, False
    try:
        with change_recorder.committing(), _errors_mapped(), \
                _outcome_found() as outcome, \
                _facade().writer.using(_Scope()) as session:
            yield session
            # A late RPC call's write is rolled back, not committed.
            deadlines.check()
            # Logged in the same transaction: exactly when it is done.
            change_recorder.record(session)
            # The read model's generations of what this wrote: last.
            bumped = generations.bump(session)
            outcome.marker = change_recorder.marker()
        committed = True
        deadlines.committed()
    finally:
        _LOCAL.writing = False
        change_recorder.end()
        generations.end(committed, bumped)


class _Outcome:
    marker = None


@contextlib.contextmanager
def _outcome_found():
    """A COMMIT that lost its connection may have been carried out: on
    Galera the node had replicated the transaction when it died, and the
    other nodes commit it. For a call the change log holds (its marker
    set: the last step before the commit), ask through a new connection
    (behind a proxy, another node; with ``wsrep_sync_wait``, a read that
    waits until the cluster has settled the lost node's transactions):
    committed, the write stands and its caller is answered as usual;
    not, or no answer, the error stands (a 503 whose change-log record,
    if any, tells its client later: docs/faults.md)."""
    outcome = _Outcome()
    try:
        yield outcome
    except db_exc.DBConnectionError:
        if outcome.marker is None or not _landed(outcome.marker):
            raise
        LOG.warning('Lost the database connection at COMMIT; the change '
                    'log shows the transaction was committed (change %s, '
                    'commit %s): answering as done', *outcome.marker)


# Asking again: a proxy sends new connections to the dead node until its
# check marks it down (about a second).
_READ_BACK_TRIES, _READ_BACK_PAUSE = 10, 0.5


def _landed(marker):
    for _ in range(_READ_BACK_TRIES):
        try:
            with reader() as session:
                return change_recorder.landed(session, marker)
        except exception.ServiceUnavailable:
            time.sleep(_READ_BACK_PAUSE)
    LOG.error('Lost the database connection at COMMIT and cannot read '
              'back whether it was committed (change %s, commit %s): '
              'answering 503; the change log tells its client once the '
              'database answers', *marker)
    return False


def _serialize_sqlite_writers(engine):
    """Make SQLite writers wait for each other instead of failing.

    A deferred SQLite transaction that reads and then writes fails at once
    with "database is locked" when another one already writes. Writers here
    begin IMMEDIATE (taking the write lock first, waiting up to 30 s for
    it); readers stay deferred.

    Neither SQLAlchemy nor oslo.db has a setting for the kind of BEGIN:
    SQLAlchemy documents a ``begin`` listener emitting it as the way for
    pysqlite, and oslo.db installs one emitting a plain BEGIN, which must
    go. Putting ours ahead with ``insert=True`` would keep it, but engine
    events drop that flag (ConnectionEvents._listen, SQLAlchemy 2.1), so
    the begin listeners are replaced; ours keeps oslo.db's
    "in_transaction" marker, which its commit and rollback listeners clear.
    tests/unit/test_sqlite_writers.py fails if writers begin deferred.
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


def _socket_timeouts(dialect_name):
    """The driver's connect arguments that bound its waits on the
    database's socket ([database] io_timeout, connect_timeout)."""
    io_timeout = CONF.database.io_timeout
    connect_timeout = CONF.database.connect_timeout
    if dialect_name == 'mysql':
        params = {'connect_timeout': connect_timeout}
        if io_timeout:
            params.update(read_timeout=io_timeout, write_timeout=io_timeout)
        return params
    if dialect_name == 'postgresql':
        params = {'connect_timeout': connect_timeout}
        if io_timeout:
            # libpq has no read timeout: these notice a peer that stops
            # acknowledging (data unacknowledged for io_timeout; or,
            # idle, keepalives unanswered for about io_timeout).
            params.update(tcp_user_timeout=io_timeout * 1000, keepalives=1,
                          keepalives_idle=max(1, io_timeout // 2),
                          keepalives_interval=max(1, io_timeout // 6),
                          keepalives_count=3)
        return params
    return {}


def _bound_socket_waits(engine):
    """Every new connection gets _socket_timeouts unless the URL or
    [database] connection_parameters already chose a value."""
    defaults = _socket_timeouts(engine.dialect.name)
    if not defaults:
        return

    def _connect(dialect, record, cargs, cparams):
        for key, value in defaults.items():
            cparams.setdefault(key, value)

    sa.event.listen(engine, 'do_connect', _connect)
    # oslo.db tried a first connection while making the engine, before
    # this listener: don't let it stay in the pool unbounded.
    engine.pool.dispose()


def _connect_failures_are_disconnects(engine):
    """A connection that cannot be opened is an unreachable database.

    oslo.db recognises PostgreSQL's refusal only by libpq's old wording
    ("could not connect to server"); libpq 14 and later say "connection
    to server at ... failed", which then crossed RPC as a raw
    OperationalError: a 500 for every request while PostgreSQL was away.
    Marked as a disconnect here (before oslo.db's filters see it), it
    becomes DBConnectionError, hence a 503, and SQLAlchemy drops the
    pooled connections.
    """
    operational_error = engine.dialect.loaded_dbapi.OperationalError

    def _on_error(context):
        if (context.connection is None and not context.is_pre_ping
                and isinstance(context.original_exception,
                               operational_error)):
            context.is_disconnect = True

    # Ahead of oslo.db's filters, which stop the chain by raising. (The
    # insert flag of event.listen does not reach the dialect's list.)
    sa.event.remove(engine, 'handle_error', exc_filters.handler)
    sa.event.listen(engine, 'handle_error', _on_error)
    sa.event.listen(engine, 'handle_error', exc_filters.handler,
                    retval=True)


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
