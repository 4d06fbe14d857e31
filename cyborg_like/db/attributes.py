"""Attributes of deployables (resource class, traits), as Cyborg has them.

Attributes a driver reports are kept in step by inventory reports; those
added here are marked ``source = api`` and kept until deleted here.
"""

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.db import api
from cyborg_like.db import host_changes
from cyborg_like.db import models

ATTR = models.Attribute


def list_attributes(filters, limit, marker=None, sort_key='created_at',
                    sort_dir='asc'):
    query = sa.select(ATTR)
    if filters.get('deployable_id') is not None:
        query = query.where(ATTR.deployable_id == filters['deployable_id'])
    if filters.get('key'):
        query = query.where(ATTR.key == filters['key'])
    with api.reader() as session:
        query = api.paginate(session, query, ATTR, limit, marker, sort_key,
                             sort_dir)
        return [to_dict(a) for a in session.scalars(query)]


def get(uuid):
    with api.reader() as session:
        return to_dict(_get(session, uuid))


def create(deployable_id, key, value):
    try:
        with api.writer() as session:
            if session.get(models.Deployable, deployable_id) is None:
                raise exception.NotFound(
                    'Deployable with id %s could not be found.'
                    % deployable_id)
            attribute = ATTR(uuid=uuidutils.generate_uuid(),
                             deployable_id=deployable_id, key=key,
                             value=value, source='api')
            session.add(attribute)
            session.flush()
            host_changes.mark_deployable_dirty(session, deployable_id)
            return to_dict(attribute)
    except db_exc.DBDuplicateEntry:
        raise exception.Conflict('Deployable %s already has an attribute '
                                 '%s.' % (deployable_id, key))


def delete(uuid):
    with api.writer() as session:
        attribute = _get(session, uuid)
        host_changes.mark_deployable_dirty(session, attribute.deployable_id)
        session.delete(attribute)


def _get(session, uuid):
    attribute = session.scalars(sa.select(ATTR).where(
        ATTR.uuid == uuid)).first()
    if attribute is None:
        raise exception.NotFound('Attribute %s could not be found.' % uuid)
    return attribute


def to_dict(attribute):
    return {
        'uuid': attribute.uuid,
        'deployable_id': attribute.deployable_id,
        'key': attribute.key,
        'value': attribute.value,
        'created_at': api.isotime(attribute.created_at),
        'updated_at': api.isotime(attribute.updated_at),
    }
