"""Per-project usage of accelerators, counted race-free.

Usage lives in one row per (project, resource class), changed only by
``UPDATE ... SET in_use = in_use + n WHERE in_use + n <= limit`` in the same
transaction that creates or deletes the accelerator requests: two
conductors can never both take the last unit.
"""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.db import api
from cyborg_like.db import models

USAGE = models.QuotaUsage


def reserve(session, project_id, counts, limits):
    """Within the caller's transaction: take ``counts`` ({rc: n})."""
    for resource, count in sorted(counts.items()):
        limit = limits.get(resource)
        query = sa.update(USAGE).where(USAGE.project_id == project_id,
                                       USAGE.resource == resource)
        if limit is not None and limit >= 0:
            query = query.where(USAGE.in_use + count <= limit)
        query = query.values(in_use=USAGE.in_use + count)
        # The row is there but for a project's first request: one
        # statement in the usual case.
        taken = session.execute(query).rowcount == 1
        if not taken and _ensure_row(session, project_id, resource):
            taken = session.execute(query).rowcount == 1
        if not taken:
            in_use = session.scalar(sa.select(USAGE.in_use).where(
                USAGE.project_id == project_id, USAGE.resource == resource))
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
        return dict(session.execute(
            sa.select(USAGE.resource, USAGE.in_use)
            .where(USAGE.project_id == project_id)).all())


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
