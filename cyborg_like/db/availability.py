"""The facts of the availability feed, and the change log behind its
cursor.

Every transaction that changes what a host offers (its inventory, a
device's status, health or drain, a handle taken or given back, the host
going down or coming back, its Placement aggregates) adds the host to
``availability_changes`` (with db/host_changes.py, which every writer
imports); the newest id is the feed's cursor. A poller
holding cursor N asks for the hosts with a change after N and gets only
theirs; one whose N was pruned away (older than [conductor]
availability_changes_retention) is told to start over. The log is
insert-only: binds on one host never wait on a shared counter row.

Reading the facts costs four queries whatever the number of devices.
"""

import datetime
import json

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import host_changes
from cyborg_like.db import hosts
from cyborg_like.db import lease_windows
from cyborg_like.db import models

CHANGE = models.AvailabilityChange
DEP, DEV, HOST = models.Deployable, models.Device, models.Host
HANDLE, ATTR = models.AttachHandle, models.Attribute


def changed_now(hostnames):
    """In a transaction of its own (a host went down or came back); within
    a writer's transaction, its writers call ``host_changes.changed``."""
    if hostnames:
        with api.writer() as session:
            host_changes.changed(session, hostnames)


def prune(retention):
    """Forget changes older than ``retention`` seconds, but never the
    newest: the cursor must not go back."""
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=retention)
    with api.writer() as session:
        newest = session.scalar(sa.select(sa.func.max(CHANGE.id)))
        if newest is not None:
            session.execute(sa.delete(CHANGE).where(
                CHANGE.changed_at < cutoff, CHANGE.id < newest))


def cursor():
    """The newest change: what a poller's ETag is checked against."""
    with api.reader() as session:
        return _cursor(session)


def _cursor(session):
    return session.scalar(sa.select(sa.func.max(CHANGE.id))) or 0


def facts(since, host_down_after, at=None):
    """``(cursor, changed hosts or None, deployables)``.

    A deployable of a device a lease holds is not usable: in an open
    window now, or in a window at ``at`` (a future time, naive UTC).

    With ``since`` (a cursor a poller holds): the deployables of the hosts
    changed after it only, and those hosts (a host with none left is
    among them, with no deployable). The cursor is read first, so a change
    made while the facts are read is sent again next time, never lost.
    """
    with api.reader() as session:
        cursor = _cursor(session)
        changed_hosts = None
        if since is not None:
            changed_hosts = _changed_since(session, since, cursor)
        where = ([DEV.hostname.in_(changed_hosts)]
                 if changed_hosts is not None else [])
        rows = [] if changed_hosts == [] else _deployables(
            session, where, host_down_after, at)
    return cursor, changed_hosts, rows


def _changed_since(session, since, cursor):
    if since > cursor:
        raise exception.AvailabilityCursorInvalid(cursor=since)
    oldest = session.scalar(sa.select(sa.func.min(CHANGE.id)))
    if oldest is not None and since < oldest - 1:
        raise exception.AvailabilityCursorExpired(cursor=since)
    return sorted(session.scalars(
        sa.select(CHANGE.hostname).where(CHANGE.id > since).distinct()))


def _deployables(session, where, host_down_after, at=None):
    cutoff = hosts.utcnow() - datetime.timedelta(seconds=host_down_after)
    leased = lease_windows.held_devices(session, at=at)
    rows = session.execute(
        sa.select(DEP.id, DEP.name, DEP.num_accelerators, DEP.bitstream_id,
                  DEP.device_id,
                  DEV.uuid.label('device_uuid'), DEV.type, DEV.vendor,
                  DEV.model, DEV.hostname, DEV.status, DEV.service_state,
                  DEV.drained_by, HOST.last_heartbeat, HOST.aggregates)
        .join(DEV, DEV.id == DEP.device_id)
        .outerjoin(HOST, HOST.hostname == DEV.hostname)
        .where(DEP.num_accelerators > 0, *where)
        .order_by(DEV.hostname, DEP.id)).all()
    attributes, handles = {}, {}
    for dep_id, key, value in session.execute(
            sa.select(ATTR.deployable_id, ATTR.key, ATTR.value)
            .join(DEP, DEP.id == ATTR.deployable_id)
            .join(DEV, DEV.id == DEP.device_id).where(*where)):
        attributes.setdefault(dep_id, {})[key] = value
    for dep_id, in_use, pending, count in session.execute(
            sa.select(HANDLE.deployable_id, HANDLE.in_use,
                      HANDLE.release_pending, sa.func.count())
            .join(DEP, DEP.id == HANDLE.deployable_id)
            .join(DEV, DEV.id == DEP.device_id).where(*where)
            .group_by(HANDLE.deployable_id, HANDLE.in_use,
                      HANDLE.release_pending)):
        counts = handles.setdefault(dep_id, {'used': 0, 'releasing': 0})
        if in_use:
            counts['used'] += count
        elif pending:
            counts['releasing'] += count
    functions = _functions(session, {r.bitstream_id for r in rows
                                     if r.bitstream_id})
    return [_fact(row, attributes.get(row.id, {}),
                  handles.get(row.id, {'used': 0, 'releasing': 0}),
                  functions.get(row.bitstream_id), cutoff,
                  row.device_id in leased) for row in rows]


def _functions(session, bitstream_ids):
    """{bitstream id: function name} of the catalog's images."""
    if not bitstream_ids:
        return {}
    return dict(session.execute(
        sa.select(models.Bitstream.uuid, models.Bitstream.function_name)
        .where(models.Bitstream.uuid.in_(sorted(bitstream_ids)))).all())


def _fact(row, attributes, handles, function, cutoff, leased=False):
    host_up = row.last_heartbeat is not None and row.last_heartbeat >= cutoff
    return {
        'hostname': row.hostname, 'name': row.name,
        'device_uuid': row.device_uuid, 'device_type': row.type,
        'vendor': row.vendor, 'model': row.model,
        'num_accelerators': row.num_accelerators,
        'bitstream_id': row.bitstream_id, 'function': function,
        'attributes': attributes,
        'used': handles['used'], 'releasing': handles['releasing'],
        'leased': leased,
        # The host's Placement aggregates (db/placement_sync.py).
        'aggregates': json.loads(row.aggregates or '[]'),
        'usable': (host_up and row.status == 'enabled' and not leased
                   and row.service_state != states.DRAINED
                   and row.drained_by is None),
    }
