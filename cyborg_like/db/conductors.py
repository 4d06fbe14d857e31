"""Conductors' liveness: every conductor process heartbeats a row here.

Work a conductor accepted (a binding, an operation) names it; when its row
stops being refreshed, any other conductor fails that work (db/arqs.py,
db/operations.py) instead of leaving it, and the handles it holds, for
good.
"""

import datetime

import sqlalchemy as sa

from cyborg_like.db import api
from cyborg_like.db import hosts
from cyborg_like.db import models

COND = models.Conductor


@api.retry_on_deadlock
def beat(uuid, hostname):
    """Conductor ``uuid`` is alive now (its row is made on first beat)."""
    now = hosts.utcnow()
    with api.writer() as session:
        updated = session.execute(
            sa.update(COND).where(COND.uuid == uuid)
            .values(last_heartbeat=now)).rowcount
        if not updated:
            session.add(COND(uuid=uuid, hostname=hostname,
                             last_heartbeat=now))


def remove(uuid):
    """A clean stop: its work is finished, nothing of it is left alive."""
    with api.writer() as session:
        session.execute(sa.delete(COND).where(COND.uuid == uuid))


def alive(down_after):
    """A subquery of the uuids of conductors heard from recently."""
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=down_after)
    return sa.select(COND.uuid).where(COND.last_heartbeat >= cutoff)


def hosts_down(down_after):
    """A subquery of the hostnames whose agents stopped heartbeating."""
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=down_after)
    return sa.select(models.Host.hostname).where(sa.or_(
        models.Host.last_heartbeat.is_(None),
        models.Host.last_heartbeat < cutoff))


def list_conductors(down_after):
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=down_after)
    with api.reader() as session:
        rows = session.scalars(sa.select(COND).order_by(COND.hostname,
                                                        COND.id)).all()
        return [{'uuid': c.uuid, 'hostname': c.hostname,
                 'state': 'up' if c.last_heartbeat >= cutoff else 'down',
                 'last_heartbeat': api.isotime(c.last_heartbeat),
                 'started_at': api.isotime(c.created_at)} for c in rows]
