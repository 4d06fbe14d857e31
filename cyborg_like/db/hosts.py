"""Hosts running an agent: heartbeats and whether they are up."""

import datetime

import sqlalchemy as sa

from cyborg_like.db import api
from cyborg_like.db import models


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def set_inventory_hash(session, hostname, inventory_hash):
    """Within the caller's transaction: the inventory it applied. A report
    is a sign of life too, so a host is up from its first report on."""
    host = _get_or_add(session, hostname)
    host.inventory_hash = inventory_hash
    host.last_heartbeat = utcnow()


def list_hosts(down_after):
    """Every host with ``state`` up or down by its last heartbeat."""
    cutoff = utcnow() - datetime.timedelta(seconds=down_after)
    with api.reader() as session:
        rows = session.scalars(
            sa.select(models.Host).order_by(models.Host.hostname)).all()
        return [_to_dict(host, cutoff) for host in rows]


def _get_or_add(session, hostname):
    host = session.scalars(sa.select(models.Host).where(
        models.Host.hostname == hostname)).first()
    if host is None:
        host = models.Host(hostname=hostname)
        session.add(host)
        session.flush()
    return host


def _to_dict(host, cutoff):
    up = host.last_heartbeat is not None and host.last_heartbeat >= cutoff
    return {
        'hostname': host.hostname,
        'state': 'up' if up else 'down',
        'last_heartbeat': api.isotime(host.last_heartbeat),
        'agent_version': host.agent_version,
        'inventory_hash': host.inventory_hash,
    }
