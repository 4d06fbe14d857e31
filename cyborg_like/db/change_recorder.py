"""The writing half of the change log (db/changes.py): what a logged
call's transactions write, recorded in the same transaction.

``api.writer()`` calls ``begin``, ``committing``, ``record`` and ``end``
around each transaction, and ``marker`` and ``landed`` when its COMMIT
lost its connection; an engine listener (``track``) notes the tables
written and the uuids inserted. A module of its own that imports only the
models (and the statement parser of generations.py), as generations.py
is, so that ``db/api.py`` imports it and nothing here imports
``db/api.py``: the reading half (``list_changes``, ``prune``) stays in
changes.py, which opens its own transactions.
"""

import contextlib
import threading

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.db import generations
from cyborg_like.db import models

CHANGE = models.Change
# The agents' reports: the hardware's state, not a change someone asked for.
UNRECORDED = frozenset((
    'report_inventory', 'heartbeat', 'handle_released',
    'report_driver_progress', 'finish_driver_operation'))
# The arguments that name a call's target, and how many ids are kept.
_NAMING = ('uuid', 'uuids', 'hostname', 'project_id', 'name', 'names',
           'instance_uuid', 'deployable_id')
_MAX_TARGETS = 64
_LOCAL = threading.local()


def track(engine):
    """Note the tables every writer writes and the uuids it inserts."""
    sa.event.listen(engine, 'before_cursor_execute', _seen)


def _seen(conn, cursor, statement, parameters, context, executemany):
    stack = getattr(_LOCAL, 'stack', None)
    if not stack or stack[-1] is None:
        return      # not in a writer, or in one that is not logged
    table = generations.written_table(statement)
    if table is None or table == CHANGE.__tablename__:
        return
    written = stack[-1]
    written['tables'].add(table)
    if statement.lstrip()[:6].upper() == 'INSERT':
        for values in getattr(context, 'compiled_parameters', None) or ():
            uuid = values.get('uuid')
            if uuid:
                written['created'].append(uuid)


def begin():
    """A writer's transaction starts; only a logged call's is watched
    (the heartbeats' flushes, periodic work and the agents' reports cost
    nothing here)."""
    if not hasattr(_LOCAL, 'stack'):
        _LOCAL.stack = []
    _LOCAL.stack.append({'tables': set(), 'created': []}
                        if _logged(deadlines.served()) else None)


def _logged(call):
    return call is not None and call.method not in UNRECORDED


def end():
    _LOCAL.stack.pop()


def record(session):
    """Last step of a writer's transaction: log it if it serves a call."""
    call = deadlines.served()
    written = _LOCAL.stack[-1]
    if written is None:
        return
    session.flush()     # what the ORM still holds is written, and seen
    if not written['tables']:
        return
    if call.change_id is not None:
        _widen(session, call.change_id, written)
        return
    context = call.context
    values = {
        'uuid': uuidutils.generate_uuid(),
        'request_id': getattr(context, 'request_id', None) or '-',
        'method': call.method or '-',
        'user_id': getattr(context, 'user_id', None),
        'project_id': getattr(context, 'project_id', None),
        'written': ','.join(sorted(written['tables'])),
        'target': _target(call.kwargs, written['created']),
        'created_at': models.utcnow(),
    }
    call_id = getattr(context, 'call_id', None)
    try:
        call.change_id = session.execute(
            sa.insert(CHANGE).values(commits=1, call_id=call_id, **values)
        ).inserted_primary_key[0]
    except db_exc.DBDuplicateEntry as error:
        if 'call_id' not in (error.columns or ()):
            raise
        # A second delivery of a call carried out before: its writes are
        # rolled back with this transaction (rpc.DropsLateCalls answers).
        raise exception.CallDoneBefore(request_id=values['request_id'],
                                       method=values['method']) from None
    written['marker'] = (call.change_id, 1)


def marker():
    """What tells whether the current transaction committed, once
    ``record`` ran: (change row id, its commits count after it), or None
    for a transaction the log does not hold."""
    written = _LOCAL.stack[-1]
    return written.get('marker') if written is not None else None


def landed(session, marker):
    """Whether the transaction of ``marker`` committed, read in
    ``session`` (another connection than the one whose COMMIT failed)."""
    change_id, commits = marker
    found = session.execute(sa.select(CHANGE.commits).where(
        CHANGE.id == change_id)).scalar()
    return found is not None and found >= commits


@contextlib.contextmanager
def committing():
    """Around a writer's commit: a call whose first logged transaction
    failed to commit logs its next one afresh."""
    call = deadlines.served()
    before = call.change_id if call is not None else None
    try:
        yield
    except BaseException:
        if call is not None:
            call.change_id = before
        raise


def _widen(session, change_id, written):
    row = session.execute(sa.select(
        CHANGE.written, CHANGE.target, CHANGE.commits).where(
        CHANGE.id == change_id)).first()
    if row is None:
        return
    tables = set(row.written.split(',')) | written['tables']
    targets = (row.target or '').split(',') if row.target else []
    session.execute(sa.update(CHANGE).where(CHANGE.id == change_id).values(
        written=','.join(sorted(tables)),
        target=_joined(targets + written['created']),
        commits=row.commits + 1))
    written['marker'] = (change_id, row.commits + 1)


def _target(kwargs, created):
    named = []
    for key in _NAMING:
        value = kwargs.get(key)
        if isinstance(value, (list, tuple)):
            named.extend(str(item) for item in value)
        elif value not in (None, ''):
            named.append(str(value))
    bindings = kwargs.get('bindings')
    if isinstance(bindings, dict):
        named.extend(sorted(bindings))
    return _joined(named + created)


def _joined(ids):
    unique = list(dict.fromkeys(ids))
    if len(unique) > _MAX_TARGETS:
        unique = unique[:_MAX_TARGETS] + ['...']
    return ','.join(unique) or None
