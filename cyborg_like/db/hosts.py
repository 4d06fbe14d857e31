"""Hosts running an agent: heartbeats and whether they are up."""

import datetime
import json

import sqlalchemy as sa

from cyborg_like.common import exception
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


# Agents from this version on confirm each release (conductor 1.6).
CONFIRMS_RELEASES = (1, 1)


# Agents from this version on run driver playbooks (agent RPC 1.3).
RUNS_PLAYBOOKS = (1, 2)


def confirms_releases(session, hostname):
    """Whether the agent of ``hostname`` confirms releases of handles."""
    return agent_at_least(session, hostname, CONFIRMS_RELEASES)


def agent_at_least(session, hostname, wanted):
    version = session.scalar(sa.select(models.Host.agent_version).where(
        models.Host.hostname == hostname))
    try:
        return tuple(int(p) for p in version.split('.')) >= wanted
    except (AttributeError, ValueError):
        return False


def list_hosts(down_after, limit=None, marker=None):
    """A page of hosts in hostname order after ``marker`` (a hostname),
    each with ``state`` up or down by its last heartbeat."""
    cutoff = utcnow() - datetime.timedelta(seconds=down_after)
    with api.reader() as session:
        query = sa.select(models.Host).order_by(models.Host.hostname)
        if marker is not None:
            query = query.where(models.Host.hostname > marker)
        rows = session.scalars(query.limit(limit)).all()
        drained = _drained_devices(session, [h.hostname for h in rows])
        return [dict(_to_dict(host, cutoff),
                     drained_devices=drained.get(host.hostname, []))
                for host in rows]


def get_host(hostname, down_after):
    cutoff = utcnow() - datetime.timedelta(seconds=down_after)
    with api.reader() as session:
        host = session.scalars(sa.select(models.Host).where(
            models.Host.hostname == hostname)).first()
        if host is None:
            raise exception.HostNotFound(hostname=hostname)
        drained = _drained_devices(session, [hostname])
        return dict(_to_dict(host, cutoff),
                    drained_devices=drained.get(hostname, []))


def _drained_devices(session, hostnames):
    """``{hostname: [{uuid, drained_by, reason}]}`` of every drained
    device of ``hostnames``, in one query (db/driver_operations.py)."""
    found = {}
    if not hostnames:
        return found
    rows = session.execute(
        sa.select(models.Device.hostname, models.Device.uuid,
                  models.Device.drained_by, models.Device.drain_reason)
        .where(models.Device.drained_by.is_not(None),
               models.Device.hostname.in_(hostnames))
        .order_by(models.Device.id))
    for hostname, uuid, drained_by, reason in rows:
        found.setdefault(hostname, []).append(
            {'uuid': uuid, 'drained_by': drained_by, 'reason': reason})
    return found


def last_heartbeats():
    """{hostname: last heartbeat (naive UTC) or None} of every host."""
    with api.reader() as session:
        return dict(session.execute(sa.select(
            models.Host.hostname, models.Host.last_heartbeat)).all())


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
        'driver_versions': json.loads(host.driver_versions or '{}'),
        # Of its compute node in Placement, as the last sync read them.
        'aggregates': json.loads(host.aggregates or '[]'),
        'labels': json.loads(host.labels or '{}'),
    }


def set_labels(hostname, changes, down_after):
    """Merge ``changes`` into the host's labels (a None value removes
    the label) under the host's row lock; answers the host."""
    with api.writer() as session:
        host = session.scalars(sa.select(models.Host).where(
            models.Host.hostname == hostname).with_for_update()).first()
        if host is None:
            raise exception.HostNotFound(hostname=hostname)
        labels = json.loads(host.labels or '{}')
        labels.update(changes)
        labels = {k: v for k, v in labels.items() if v is not None}
        host.labels = dumped_labels(labels) if labels else None
    return get_host(hostname, down_after)


def dumped_labels(labels):
    """Labels as stored: JSON with sorted keys and ASCII escapes, so a
    label's ``"key": "value"`` text is found in it by LIKE, the same on
    every database (``labelled``)."""
    return json.dumps(labels, sort_keys=True)


def labelled(labels):
    """The host has every one of ``labels``."""
    return sa.and_(*(models.Host.labels.contains(
        dumped_labels({key: value})[1:-1], autoescape=True)
        for key, value in sorted(labels.items())))
