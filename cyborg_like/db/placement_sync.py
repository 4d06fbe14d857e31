"""What the Placement sync reads and marks: hosts to sync, their devices.

A host is *dirty* while Placement may not match it. Whatever changes what
Placement shows of a host (its inventory, a device's status or health, a
deployable's bitstream or attributes) bumps ``hosts.placement_dirty`` in
its own transaction, with ``mark_dirty`` below. The sync remembers the
value it started from and resets it only if nothing bumped it meanwhile,
so a change that lands during a sync is never lost.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_like.db import api
from cyborg_like.db import models

HOST = models.Host


def mark_dirty(session, hostnames):
    """Within the caller's transaction: these hosts need a sync."""
    names = sorted(set(hostnames))
    if names:
        session.execute(
            sa.update(HOST).where(HOST.hostname.in_(names))
            .values(placement_dirty=HOST.placement_dirty + 1)
            .execution_options(synchronize_session=False))


def mark_dirty_now(hostnames):
    """In a transaction of its own: these hosts need a sync."""
    if hostnames:
        with api.writer() as session:
            mark_dirty(session, hostnames)


def mark_deployable_dirty(session, deployable_id=None, deployable_uuid=None):
    """Within the caller's transaction: the host of a deployable."""
    query = (sa.select(models.Device.hostname)
             .join(models.Deployable,
                   models.Deployable.device_id == models.Device.id))
    if deployable_id is not None:
        query = query.where(models.Deployable.id == deployable_id)
    else:
        query = query.where(models.Deployable.uuid == deployable_uuid)
    mark_dirty(session, session.scalars(query).all())


def hosts_to_sync(everything=False):
    """``[(hostname, mark)]`` of dirty hosts, or of all with
    ``everything``; ``mark`` is what ``mark_synced`` compares with."""
    query = sa.select(HOST.hostname, HOST.placement_dirty)
    if not everything:
        query = query.where(HOST.placement_dirty != 0)
    with api.reader() as session:
        return [tuple(row) for row in
                session.execute(query.order_by(HOST.hostname)).all()]


def mark_synced(hostname, mark):
    """The host is clean, unless it changed since ``mark`` was read.

    Returns whether it is clean now.
    """
    with api.writer() as session:
        result = session.execute(
            sa.update(HOST)
            .where(HOST.hostname == hostname, HOST.placement_dirty == mark)
            .values(placement_dirty=0)
            .execution_options(synchronize_session=False))
        return result.rowcount == 1


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
        return [_to_dict(d) for d in session.scalars(query).unique()]


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
    }
