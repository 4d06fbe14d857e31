"""Per-project usage of accelerators, counted race-free, and the
projects' own limits.

Usage lives in one row per (project, resource class), changed only by
``UPDATE ... SET in_use = in_use + n WHERE in_use + n <= limit`` in the same
transaction that creates or deletes the accelerator requests: two
conductors can never both take the last unit.

A project's own limits (``quota_limits``, set through the API) are read by
``reserve`` in that same transaction, after it has locked the usage row and
with a locking read (the latest committed row, also on MariaDB, whose
plain reads see the transaction's first snapshot); ``set_limits`` locks the
usage rows before it writes. A limit and the creations are thereby
ordered: a creation that commits after a limit was committed counted
against it, on every backend.
"""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.db import api
from cyborg_like.db import models

USAGE = models.QuotaUsage
LIMIT = models.QuotaLimit


def reserve(session, project_id, counts, limits, own_limits=False):
    """Within the caller's transaction: take ``counts`` ({rc: n}) within
    ``limits`` ({rc: n}; absent or negative: unlimited), which the
    project's own limits override when ``own_limits`` (the local driver)."""
    for resource, count in sorted(counts.items()):
        limit = limits.get(resource)
        if own_limits:
            _lock_usage(session, project_id, resource)
            limit = _own_limit(session, project_id, resource, limit)
        query = sa.update(USAGE).where(USAGE.project_id == project_id,
                                       USAGE.resource == resource)
        if limit is not None and limit >= 0:
            query = query.where(USAGE.in_use + count <= limit)
        query = query.values(in_use=USAGE.in_use + count)
        # The row is there but for a project's first request: one
        # statement in the usual case (three with own limits: the lock,
        # the limit, this).
        taken = session.execute(query).rowcount == 1
        if not taken and _ensure_row(session, project_id, resource):
            taken = session.execute(query).rowcount == 1
        if not taken:
            # A locking read: the usage the UPDATE saw, not the snapshot
            # MariaDB's plain reads keep.
            in_use = session.scalar(sa.select(USAGE.in_use).where(
                USAGE.project_id == project_id, USAGE.resource == resource)
                .with_for_update(read=True))
            raise exception.QuotaExceeded(resource=resource, limit=limit,
                                          in_use=in_use, requested=count)


def release(session, project_id, counts):
    for resource, count in counts.items():
        session.execute(
            sa.update(USAGE).where(USAGE.project_id == project_id,
                                   USAGE.resource == resource)
            .values(in_use=sa.case((USAGE.in_use > count,
                                    USAGE.in_use - count), else_=0)))


def usage(project_id):
    with api.reader() as session:
        return _usage(session, project_id)


def _usage(session, project_id):
    return dict(session.execute(
        sa.select(USAGE.resource, USAGE.in_use)
        .where(USAGE.project_id == project_id)).all())


def own_limits(project_id):
    """{rc: limit} the project's own limits (-1: unlimited)."""
    with api.reader() as session:
        return dict(session.execute(
            sa.select(LIMIT.resource, LIMIT.hard_limit)
            .where(LIMIT.project_id == project_id)).all())


@api.retry_on_deadlock
def set_limits(project_id, limits):
    """Set the project's own limits ({rc: n or -1}), merged into those it
    has. Each class's usage row is locked first, as ``reserve`` locks it:
    a creation waits for the new limit, or the limit for the creation.
    Answers the project's usage as the limits took effect (the classes
    set: as locked, what creations committed before them)."""
    with api.writer() as session:
        locked = {}
        for resource, limit in sorted(limits.items()):
            locked[resource] = _lock_usage(session, project_id, resource)
            if _own_limit(session, project_id, resource, None) is None:
                # No other writer can add it: we hold the usage row.
                session.add(LIMIT(project_id=project_id, resource=resource,
                                  hard_limit=limit))
            else:
                session.execute(sa.update(LIMIT).where(
                    LIMIT.project_id == project_id,
                    LIMIT.resource == resource).values(hard_limit=limit))
        session.flush()
        return dict(_usage(session, project_id), **locked)


@api.retry_on_deadlock
def delete_limits(project_id):
    """Back to the defaults. A creation holding a limit row (its locking
    read) is waited for; one after sees the default."""
    with api.writer() as session:
        session.execute(sa.delete(LIMIT).where(
            LIMIT.project_id == project_id))


def _lock_usage(session, project_id, resource):
    """Lock the usage row (made if missing) until the transaction ends;
    its usage, the latest committed (a locking read, on MariaDB too)."""
    query = sa.select(USAGE.in_use).where(
        USAGE.project_id == project_id,
        USAGE.resource == resource).with_for_update()
    in_use = session.scalar(query)
    if in_use is None:
        # A project's first request (two racing: the deadlock retry of
        # the whole transaction, api.retry_on_deadlock, settles it).
        _ensure_row(session, project_id, resource)
        in_use = session.scalar(query)
    return in_use


def _own_limit(session, project_id, resource, default):
    found = session.scalar(
        sa.select(LIMIT.hard_limit).where(LIMIT.project_id == project_id,
                                          LIMIT.resource == resource)
        .with_for_update(read=True))
    return default if found is None else found


def _ensure_row(session, project_id, resource):
    """Add the usage row if it is missing; whether it was."""
    exists = session.scalar(sa.select(USAGE.id).where(
        USAGE.project_id == project_id, USAGE.resource == resource))
    if exists is None:
        try:
            with session.begin_nested():
                session.add(USAGE(project_id=project_id, resource=resource,
                                  in_use=0))
        except db_exc.DBDuplicateEntry:
            pass        # another conductor added it: it is there now
    return exists is None
