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

The rows are written by change_recorder.py, which ``db/api.py``'s writer
calls; this module reads and prunes them.
"""

import datetime

from oslo_serialization import jsonutils
import sqlalchemy as sa

from cyborg_like.db import api
from cyborg_like.db import change_recorder
from cyborg_like.db import models

CHANGE = models.Change
# The calls the log never holds (the agents' reports).
UNRECORDED = change_recorder.UNRECORDED


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


def keep_reply(change_id, reply):
    """Keep the answer of the call logged as ``change_id`` (JSON, as RPC
    carries it); outside the call, so also past its deadline."""
    with api.writer() as session:
        session.execute(sa.update(CHANGE).where(CHANGE.id == change_id)
                        .values(reply=jsonutils.dumps(reply)))


def reply_of(request_id, method):
    """What the change log says of ``method`` called under
    ``request_id``: ``{'done': False}`` (not carried out), ``{'done':
    True, 'reply': ...}`` with the answer its conductor sent, or
    ``{'done': True, 'target': [ids]}`` when it was done but its answer
    was not kept."""
    return _reply((CHANGE.request_id == request_id,
                   CHANGE.method == method))


def reply_of_call(call_id):
    """What the change log says of the RPC call ``call_id`` (as
    ``reply_of``)."""
    return _reply((CHANGE.call_id == call_id,))


def _reply(where):
    with api.reader() as session:
        row = session.execute(
            sa.select(CHANGE.reply, CHANGE.target).where(*where)
            .order_by(CHANGE.id.desc()).limit(1)).first()
    if row is None:
        return {'done': False}
    if row.reply is None:
        return {'done': True,
                'target': row.target.split(',') if row.target else []}
    return {'done': True, 'reply': jsonutils.loads(row.reply)}


def prune(retention):
    """Forget changes older than ``retention`` seconds."""
    cutoff = models.utcnow() - datetime.timedelta(seconds=retention)
    with api.writer() as session:
        session.execute(sa.delete(CHANGE).where(CHANGE.created_at < cutoff))
