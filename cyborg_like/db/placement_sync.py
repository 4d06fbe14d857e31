"""What the Placement sync reads and marks: hosts to sync, their devices.

A host is *dirty* while Placement may not match it. Whatever changes what
Placement shows of a host (its inventory, a device's status or health, a
deployable's bitstream or attributes) bumps ``hosts.placement_dirty`` in
its own transaction, with ``mark_dirty`` of db/host_changes.py. The sync
remembers the value it started from and resets it only if nothing bumped
it meanwhile, so a change that lands during a sync is never lost. A
conductor claims a host (``placement_claimed_until``) before syncing it,
so that conductors share the dirty hosts instead of each syncing all of
them.
"""

import json
import uuid

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_like.db import api
from cyborg_like.db import host_changes
from cyborg_like.db import hosts
from cyborg_like.db import lease_windows
from cyborg_like.db import models

HOST = models.Host


def mark_dirty_now(hostnames):
    """In a transaction of its own: these hosts need a sync."""
    if hostnames:
        with api.writer() as session:
            host_changes.mark_dirty(session, hostnames)


def mark_unsynced_dirty(synced_before):
    """Mark the hosts not synced since ``synced_before`` (a conductor's
    start-up check).

    Hosts already dirty are left as they are, so conductors starting
    together do not bump a host another one is syncing: each host is
    marked once and synced once.
    """
    with api.writer() as session:
        session.execute(
            sa.update(HOST)
            .where(HOST.placement_dirty == 0,
                   sa.or_(HOST.placement_synced_at.is_(None),
                          HOST.placement_synced_at < synced_before))
            .values(placement_dirty=1)
            .execution_options(synchronize_session=False))


def hosts_to_sync():
    """``[(hostname, mark)]`` of dirty hosts; ``mark`` is what ``claim``
    and ``release`` compare with."""
    query = (sa.select(HOST.hostname, HOST.placement_dirty)
             .where(HOST.placement_dirty != 0)
             .order_by(HOST.hostname))
    with api.reader() as session:
        return [tuple(row) for row in session.execute(query).all()]


def claim(hostname, mark, until):
    """Take the host for one sync, unless another conductor holds it or it
    changed since ``mark`` was read (synced meanwhile, or marked again:
    the next run sees the new mark). Returns whether it is ours."""
    now = hosts.utcnow()
    with api.writer() as session:
        result = session.execute(
            sa.update(HOST)
            .where(HOST.hostname == hostname, HOST.placement_dirty == mark,
                   sa.or_(HOST.placement_claimed_until.is_(None),
                          HOST.placement_claimed_until < now))
            .values(placement_claimed_until=until)
            .execution_options(synchronize_session=False))
        return result.rowcount == 1


def release(hostname, mark, synced):
    """Give the host back; with ``synced``, it is clean unless it changed
    since ``mark`` was read (then it stays marked for the next run)."""
    values = {'placement_claimed_until': None}
    if synced:
        values.update(
            placement_synced_at=hosts.utcnow(),
            placement_dirty=sa.case((HOST.placement_dirty == mark, 0),
                                    else_=HOST.placement_dirty))
    with api.writer() as session:
        session.execute(
            sa.update(HOST).where(HOST.hostname == hostname).values(values)
            .execution_options(synchronize_session=False))


def set_aggregates(hostname, aggregates):
    """The Placement aggregates of the host's compute node, as a sync read
    them. A host whose aggregates changed offers to other groups of the
    availability feed, so that is a change of the feed too, in the same
    transaction; the same aggregates again write nothing. Returns whether
    they changed."""
    value = aggregates_json(aggregates)
    with api.writer() as session:
        result = session.execute(
            sa.update(HOST)
            .where(HOST.hostname == hostname,
                   sa.func.coalesce(HOST.aggregates, '[]') != value)
            .values(aggregates=value)
            .execution_options(synchronize_session=False))
        if result.rowcount:
            host_changes.changed(session, [hostname])
        return bool(result.rowcount)


def aggregates_json(aggregates):
    """How ``hosts.aggregates`` holds them: a JSON list of canonical
    UUIDs, sorted, so that a rollout's selector finds ``"<uuid>"`` in it
    (db/rollouts.py) and equal sets are equal texts."""
    return json.dumps(sorted({canonical_uuid(a) for a in aggregates}))


def canonical_uuid(text):
    """Lower-case and hyphenated, as Placement shows its own UUIDs
    (it keeps an aggregate's as it was given)."""
    try:
        return str(uuid.UUID(str(text)))
    except ValueError:
        return str(text).lower()


def host_deployables(hostname):
    """The facts Placement needs about each deployable of a host.

    Two queries (devices with deployables, then their attributes), whatever
    the number of devices.
    """
    query = (sa.select(models.Deployable)
             .join(models.Device)
             .where(models.Device.hostname == hostname)
             .options(orm.contains_eager(models.Deployable.device),
                      orm.selectinload(models.Deployable.attributes))
             .order_by(models.Device.id, models.Deployable.id))
    with api.reader() as session:
        found = session.scalars(query).unique().all()
        # Lent in a window now: reserved whole (db/leases.py).
        leased = lease_windows.held_devices(
            session, sorted({d.device_id for d in found})) if found else ()
        return [dict(_to_dict(d), leased=d.device_id in leased)
                for d in found]


def _to_dict(deployable):
    device = deployable.device
    return {
        'rp_uuid': deployable.rp_uuid,
        'name': deployable.name,
        'num_accelerators': deployable.num_accelerators,
        'driver_name': deployable.driver_name,
        'bitstream_id': deployable.bitstream_id,
        'attributes': {a.key: a.value for a in deployable.attributes},
        'device_uuid': device.uuid,
        'device_type': device.type,
        'vendor': device.vendor,
        'model': device.model,
        'hostname': device.hostname,
        'status': device.status,
        'health': device.health,
        'service_state': device.service_state,
        'drained': device.drained_by is not None,
    }
