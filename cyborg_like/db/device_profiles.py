"""Device profiles: named groups of accelerator requirements."""

import json

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.db import api
from cyborg_like.db import models


def create(name, groups, description=None, uuid=None):
    profile = models.DeviceProfile(
        uuid=uuid or uuidutils.generate_uuid(), name=name,
        profile_json=json.dumps({'groups': groups}),
        description=description)
    try:
        with api.writer() as session:
            session.add(profile)
            session.flush()
            return to_dict(profile)
    except db_exc.DBDuplicateEntry:
        # Which unique key was hit, asked of the data rather than parsed
        # from each database's own error text.
        if uuid is not None and _uuid_taken(uuid):
            raise exception.DeviceProfileUuidExists(uuid=uuid)
        raise exception.DeviceProfileExists(name=name)


def _uuid_taken(uuid):
    with api.reader() as session:
        return session.scalar(sa.select(models.DeviceProfile.id).where(
            models.DeviceProfile.uuid == uuid)) is not None


def list_profiles(names, limit, marker=None, sort_key='created_at',
                  sort_dir='asc'):
    query = sa.select(models.DeviceProfile)
    if names:
        query = query.where(models.DeviceProfile.name.in_(names))
    with api.reader() as session:
        query = api.paginate(session, query, models.DeviceProfile, limit,
                             marker, sort_key, sort_dir)
        return [to_dict(p) for p in session.scalars(query)]


def get(uuid=None, name=None):
    with api.reader() as session:
        return to_dict(_get(session, uuid, name))


def delete(uuid=None, names=()):
    """Delete one profile by uuid, or several by name, all or none."""
    with api.writer() as session:
        if uuid is not None:
            profiles = [_get(session, uuid, None)]
        else:
            profiles = [_get(session, None, name) for name in names]
        ids = [p.id for p in profiles]
        in_use = session.execute(
            sa.select(models.ExtARQ.device_profile_id, sa.func.count())
            .where(models.ExtARQ.device_profile_id.in_(ids))
            .group_by(models.ExtARQ.device_profile_id)).first()
        if in_use is not None:
            name = next(p.name for p in profiles if p.id == in_use[0])
            raise exception.DeviceProfileInUse(name=name, count=in_use[1])
        for profile in profiles:
            session.delete(profile)


def _get(session, uuid, name):
    query = sa.select(models.DeviceProfile)
    if uuid is not None:
        query = query.where(models.DeviceProfile.uuid == uuid)
    else:
        query = query.where(models.DeviceProfile.name == name)
    profile = session.scalars(query).first()
    if profile is None:
        raise exception.DeviceProfileNotFound(name=uuid or name)
    return profile


def groups_of(profile):
    return json.loads(profile.profile_json)['groups']


def to_dict(profile):
    return {
        'id': profile.id,
        'uuid': profile.uuid,
        'name': profile.name,
        'description': profile.description,
        'groups': groups_of(profile),
        'created_at': api.isotime(profile.created_at),
        'updated_at': api.isotime(profile.updated_at),
    }
