"""Deployables: list and show, with their attributes."""

import json

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_like.common import exception
from cyborg_like.common import listing
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import bitstream_compat
from cyborg_like.db import host_changes
from cyborg_like.db import models
from cyborg_like.db import operations


def _query():
    # Attributes come in one more query for the whole page, not per row.
    return sa.select(models.Deployable).options(
        orm.selectinload(models.Deployable.attributes))


def list_deployables(filters, limit, marker=None, sort_key='created_at',
                     sort_dir='asc'):
    query = sa.select(models.Deployable)
    for name in listing.DEPLOYABLE_FILTERS:
        if filters.get(name) is not None:
            query = query.where(
                getattr(models.Deployable, name) == filters[name])
    with api.reader() as session:
        query = api.paginate(session, query, models.Deployable, limit,
                             marker, sort_key, sort_dir)
        page = session.scalars(query).all()
        attributes = _attributes_of(session, [dep.id for dep in page])
        return [to_dict(dep, attributes.get(dep.id, [])) for dep in page]


def _attributes_of(session, ids):
    """``{deployable id: [(key, value)]}`` of a page, in one query, as
    plain rows: as ORM objects they were half the conductor's CPU for a
    page of 1,000 deployables (docs/benchmarks.md)."""
    found = {}
    if ids:
        rows = session.execute(
            sa.select(models.Attribute.deployable_id, models.Attribute.key,
                      models.Attribute.value)
            .where(models.Attribute.deployable_id.in_(ids))
            .order_by(models.Attribute.key))
        for deployable_id, key, value in rows:
            found.setdefault(deployable_id, []).append((key, value))
    return found


def get_deployable(uuid):
    with api.reader() as session:
        deployable = session.scalars(_query().where(
            models.Deployable.uuid == uuid)).first()
        if deployable is None:
            raise exception.DeployableNotFound(uuid=uuid)
        return to_dict(deployable)


def to_dict(deployable, attributes=None):
    """``attributes``: its (key, value) pairs, when already loaded."""
    if attributes is None:
        attributes = [(a.key, a.value) for a in deployable.attributes]
    return {
        'id': deployable.id,
        'uuid': deployable.uuid,
        'parent_id': deployable.parent_id,
        'root_id': deployable.root_id,
        'name': deployable.name,
        'num_accelerators': deployable.num_accelerators,
        'device_id': deployable.device_id,
        'attributes_list': json.dumps([{key: value}
                                       for key, value in attributes]),
        'rp_uuid': deployable.rp_uuid,
        'driver_name': deployable.driver_name,
        'bitstream_id': deployable.bitstream_id,
        'created_at': api.isotime(deployable.created_at),
        'updated_at': api.isotime(deployable.updated_at),
    }


def start_program(uuid, bitstream_id, project_id, conductor_uuid=None):
    """Record a pending program operation on deployable ``uuid``.

    Refused while a workload holds one of its handles or another
    operation on it is unfinished. The deployable's row is locked for the
    check, so two conductors cannot both start one.
    """
    with api.writer() as session:
        return program_in(session, uuid, bitstream_id, project_id,
                          conductor_uuid)


def program_in(session, uuid, bitstream_id, project_id, conductor_uuid=None):
    """``start_program`` within the caller's transaction (a rollout starts
    its target's operation in the transaction that marks it begun)."""
    deployable = _locked(session, uuid)
    if any(h.in_use for h in deployable.attach_handles):
        raise exception.Conflict(
            'Deployable %s is in use by an accelerator request; unbind '
            'it before programming.' % uuid)
    if operations.unfinished_for(session, uuid) is not None:
        raise exception.Conflict(
            'Deployable %s is already being programmed.' % uuid)
    if deployable.device.drained_by is not None:
        # Its driver is changing, or in doubt after a failed change.
        raise exception.Conflict('Deployable %s is drained: %s' % (
            uuid, deployable.device.drain_reason))
    # A catalog image must fit the region: refused here, before the
    # operation exists or any agent is called.
    image = bitstream_compat.catalog_image(session, bitstream_id)
    if image is not None:
        bitstream_compat.check(image, deployable)
    device = deployable.device
    operation = operations.add(session, 'program', uuid, project_id,
                               conductor_uuid, hostname=device.hostname)
    cpid = device.controlpath_ids[0]
    job = {
        'hostname': device.hostname,
        'driver_name': deployable.driver_name,
        'controlpath_id': cpid.to_wire(),
        'deployable_name': deployable.name,
        'deployable_uuid': deployable.uuid,
        'bitstream_id': bitstream_compat.loaded_id(image) if image
        else bitstream_id,
        'image': bitstream_compat.image_job(image) if image else None,
        # The agent runs an older operation's job after a newer one never
        # (agent/region_order.py).
        'sequence': operation.id,
    }
    return job, operations.to_dict(operation), to_dict(deployable)


@api.retry_on_deadlock
def finish_program(operation_uuid, uuid, bitstream_id):
    """The agent programmed region ``uuid``: the operation succeeds and
    the region's bitstream is recorded, in one transaction, only while the
    operation runs. False when it had been failed meanwhile (its host
    looked down, and a rollback may have programmed the region since): the
    late answer then changes nothing."""
    with api.writer() as session:
        if not operations.apply(operation_uuid, states.SUCCEED,
                                session=session):
            return False
        session.execute(sa.update(models.Deployable)
                        .where(models.Deployable.uuid == uuid)
                        .values(bitstream_id=bitstream_id))
        host_changes.mark_deployable_dirty(session, deployable_uuid=uuid)
        return True


def _locked(session, uuid):
    # SELECT ... FOR UPDATE on the deployable alone (no outer joins, which
    # PostgreSQL cannot lock); its relations are loaded afterwards.
    found = session.scalar(sa.select(models.Deployable.id).where(
        models.Deployable.uuid == uuid).with_for_update())
    if found is None:
        raise exception.DeployableNotFound(uuid=uuid)
    return session.get(models.Deployable, found)
