"""The change log: who changed what, under which request id.

Every RPC call the conductor serves for the API (or the CLI, or Nova)
that commits a write leaves one row: the request id of the API request,
the caller's user and project, the method, the tables its transactions
wrote and its target (the objects the call named and the rows it
created). The row is written in the call's first committing transaction,
so it exists exactly when the write does, and later transactions of the
same call (a bind's steps) add what they wrote to it. A client answered
503 for a write (the broker lost the answer) asks the log by its request
id whether the write was carried out after all (docs/faults.md); an
operator reads who changed what (docs/changes.md).

The agents' reports (inventory, heartbeats, releases, a driver
operation's progress) are the hardware's state, not a change someone
asked for, and are not logged: a heartbeat every second would flood it.
"""

import contextlib
import datetime
import threading

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import deadlines
from cyborg_like.db import api
from cyborg_like.db import generations
from cyborg_like.db import models

CHANGE = models.Change
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
        'created_at': _utcnow(),
    }
    call.change_id = session.execute(
        sa.insert(CHANGE).values(**values)).inserted_primary_key[0]


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
    row = session.execute(sa.select(CHANGE.written, CHANGE.target).where(
        CHANGE.id == change_id)).first()
    if row is None:
        return
    tables = set(row.written.split(',')) | written['tables']
    targets = (row.target or '').split(',') if row.target else []
    session.execute(sa.update(CHANGE).where(CHANGE.id == change_id).values(
        written=','.join(sorted(tables)),
        target=_joined(targets + written['created'])))


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


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def list_changes(filters, limit, marker=None, sort_key='created_at',
                 sort_dir='asc', project_id=None):
    """A page of the log; ``target`` matches a change naming that id."""
    query = sa.select(CHANGE)
    for name in ('request_id', 'method', 'project_id'):
        if filters.get(name):
            query = query.where(getattr(CHANGE, name) == filters[name])
    if filters.get('target'):
        query = query.where(CHANGE.target.contains(filters['target'],
                                                   autoescape=True))
    if project_id is not None:
        query = query.where(CHANGE.project_id == project_id)
    with api.reader() as session:
        query = api.paginate(session, query, CHANGE, limit, marker,
                             sort_key, sort_dir)
        return [to_dict(change) for change in session.scalars(query)]


def to_dict(change):
    return {
        'uuid': change.uuid,
        'request_id': change.request_id,
        'method': change.method,
        'user_id': change.user_id,
        'project_id': change.project_id,
        'written': change.written.split(','),
        'target': change.target.split(',') if change.target else [],
        'created_at': api.isotime(change.created_at),
    }


def prune(retention):
    """Forget changes older than ``retention`` seconds."""
    cutoff = _utcnow() - datetime.timedelta(seconds=retention)
    with api.writer() as session:
        session.execute(sa.delete(CHANGE).where(CHANGE.created_at < cutoff))
