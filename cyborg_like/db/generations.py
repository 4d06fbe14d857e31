"""Generations of the read model's families, and their snapshots.

Any statement that writes a table of a family (``common/read_model.py``
TABLES), whichever way it was built (ORM, Core, SQL text), is seen on its
way to the database by an engine listener; ``writer()`` then bumps the
generation of each family written, in ``read_generations``, as the last
step of the same transaction, and hands the new generations to the
subscribers (the conductor's publisher) once the transaction committed.
Generations therefore increase in commit order, survive restarts, and are
shared by every conductor on the database.
"""

import contextlib
import re
import threading

import sqlalchemy as sa

from cyborg_like.common import read_model
from cyborg_like.db import models

# INSERT INTO t, UPDATE t, DELETE FROM t (quoted or not, any case).
_WRITE = re.compile(
    r'^\s*(INSERT\s+(?:IGNORE\s+)?INTO|UPDATE|DELETE\s+FROM)\s+[`"]?(\w+)',
    re.IGNORECASE)
_LOCAL = threading.local()
_SUBSCRIBERS = []
GEN = models.ReadGeneration


def track(engine):
    """Install the listener that notes the families a writer changes."""
    sa.event.listen(engine, 'before_cursor_execute', _seen)


def written_table(statement):
    """The table an INSERT, UPDATE or DELETE statement writes, or None."""
    match = _WRITE.match(statement)
    return match.group(2).lower() if match else None


def _seen(conn, cursor, statement, parameters, context, executemany):
    stack = getattr(_LOCAL, 'stack', None)
    if not stack:
        return      # not in a writer: a read, or a migration
    match = _WRITE.match(statement)
    if match is None:
        return
    table = match.group(2).lower()
    family = read_model.TABLES.get(table)
    if family is not None:
        stack[-1].add(family)
        if match.group(1).upper().startswith('DELETE'):
            stack[-1].update(read_model.CASCADES.get(table, ()))


@contextlib.contextmanager
def unserved():
    """Writes inside change only columns no family serves (the readings a
    heartbeat writes on devices: health and utilization, which the API
    reads over RPC): they bump nothing, so a heartbeat flush every second
    does not make every API process re-read every device."""
    stack = getattr(_LOCAL, 'stack', None)
    before = set(stack[-1]) if stack else None
    try:
        yield
    finally:
        if stack:
            stack[-1].intersection_update(before)


def touch(family):
    """The writer's transaction changed what ``family`` serves in a way no
    statement on its tables shows (a device's health, which ARQ answers
    show, written inside ``unserved``)."""
    stack = getattr(_LOCAL, 'stack', None)
    if stack:
        stack[-1].add(family)


def begin():
    """A writer's transaction starts (writers may nest, each its own)."""
    if not hasattr(_LOCAL, 'stack'):
        _LOCAL.stack = []
    _LOCAL.stack.append(set())
    _LOCAL.bumped = None


def bump(session):
    """Last step of a writer's transaction: bump the generations of the
    families it wrote; returns them as {family: generation}."""
    session.flush()     # what the ORM still holds is written, and seen
    families = sorted(_LOCAL.stack[-1])
    if not families:
        return {}
    # Sorted: two writers lock the rows in one order (no deadlock).
    bumped = {}
    for family in families:
        bumped[family] = _increment(session, family)
        if bumped[family] is None:
            session.execute(sa.insert(GEN).values(family=family,
                                                  generation=1))
            bumped[family] = 1
    return bumped


def _increment(session, family):
    """One statement: the family's generation plus one, and its new value
    (None: the family has no row yet). Every ARQ write pays it."""
    table = GEN.__table__
    query = sa.update(table).where(table.c.family == family)
    if session.get_bind().dialect.name == 'mysql':
        # MariaDB has no UPDATE ... RETURNING; LAST_INSERT_ID(expr) hands
        # the value back in the statement's own answer (its insert id).
        done = session.execute(query.values(
            generation=sa.func.last_insert_id(table.c.generation + 1)))
        return done.lastrowid if done.rowcount else None
    row = session.execute(query.values(generation=table.c.generation + 1)
                          .returning(table.c.generation)).first()
    return row[0] if row else None


def end(committed, generations):
    """The writer's transaction ended; subscribers hear of what it
    committed. A subscriber's failure never fails the (committed) write."""
    _LOCAL.stack.pop()
    if committed and generations:
        for subscriber in list(_SUBSCRIBERS):
            subscriber(generations)


def subscribe(callback):
    _SUBSCRIBERS.append(callback)


def unsubscribe(callback):
    if callback in _SUBSCRIBERS:
        _SUBSCRIBERS.remove(callback)


def current(session):
    found = dict(session.execute(
        sa.select(GEN.family, GEN.generation)).all())
    return {family: found.get(family, 0) for family in read_model.ANNOUNCED}
