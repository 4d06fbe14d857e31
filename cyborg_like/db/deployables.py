"""Deployables: list and show, with their attributes."""

import json

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_like.common import exception
from cyborg_like.common import listing
from cyborg_like.db import api
from cyborg_like.db import models


def _query():
    # Attributes come in one more query for the whole page, not per row.
    return sa.select(models.Deployable).options(
        orm.selectinload(models.Deployable.attributes))


def list_deployables(filters, limit, marker=None, sort_key='created_at',
                     sort_dir='asc'):
    query = _query()
    for name in listing.DEPLOYABLE_FILTERS:
        if filters.get(name) is not None:
            query = query.where(
                getattr(models.Deployable, name) == filters[name])
    with api.reader() as session:
        query = api.paginate(session, query, models.Deployable, limit,
                             marker, sort_key, sort_dir)
        return [to_dict(dep) for dep in session.scalars(query)]


def get_deployable(uuid):
    with api.reader() as session:
        deployable = session.scalars(_query().where(
            models.Deployable.uuid == uuid)).first()
        if deployable is None:
            raise exception.DeployableNotFound(uuid=uuid)
        return to_dict(deployable)


def to_dict(deployable):
    attributes = [{a.key: a.value} for a in deployable.attributes]
    return {
        'id': deployable.id,
        'uuid': deployable.uuid,
        'parent_id': deployable.parent_id,
        'root_id': deployable.root_id,
        'name': deployable.name,
        'num_accelerators': deployable.num_accelerators,
        'device_id': deployable.device_id,
        'attributes_list': json.dumps(attributes),
        'rp_uuid': deployable.rp_uuid,
        'driver_name': deployable.driver_name,
        'bitstream_id': deployable.bitstream_id,
        'created_at': api.isotime(deployable.created_at),
        'updated_at': api.isotime(deployable.updated_at),
    }
