"""Snapshots of the read model's families, for the API processes'
copies (docs/design.md, "The read model")."""

import sqlalchemy as sa

from cyborg_like.common import read_model
from cyborg_like.db import api
from cyborg_like.db import attributes
from cyborg_like.db import deployables
from cyborg_like.db import device_profiles
from cyborg_like.db import devices
from cyborg_like.db import generations
from cyborg_like.db import models

# Tries at reading a family while its generation does not move.
TRIES = 3


def _devices(session):
    return devices.dicts(session, session.scalars(
        sa.select(models.Device).order_by(models.Device.created_at,
                                          models.Device.id)).all(),
        fleet=True)


def _deployables(session):
    pairs = {}
    for deployable_id, key, value in session.execute(
            sa.select(models.Attribute.deployable_id, models.Attribute.key,
                      models.Attribute.value)
            .order_by(models.Attribute.key)):
        pairs.setdefault(deployable_id, []).append((key, value))
    rows = [deployables.to_dict(d, pairs.get(d.id, []))
            for d in session.scalars(
                sa.select(models.Deployable).order_by(
                    models.Deployable.created_at, models.Deployable.id))]
    found = [attributes.to_dict(a) for a in session.scalars(
        sa.select(models.Attribute).order_by(models.Attribute.created_at,
                                             models.Attribute.id))]
    return {'deployables': rows, 'attributes': found}


def _profiles(session):
    return [device_profiles.to_dict(p) for p in session.scalars(
        sa.select(models.DeviceProfile).order_by(
            models.DeviceProfile.created_at, models.DeviceProfile.id))]


_READERS = {read_model.DEVICES: _devices,
            read_model.DEPLOYABLES: _deployables,
            read_model.DEVICE_PROFILES: _profiles}


def snapshot(known):
    """The families' generations, and the rows of every family whose
    generation is not ``known[family]``, in the lists' default order
    (created_at, id). A family's rows are exactly those of its generation:
    read between two equal readings of it (else read again, at most TRIES
    times, then left out for the caller to ask again)."""
    with api.reader() as session:
        gens = generations.current(session)
        wanted = [f for f in read_model.FAMILIES if known.get(f) != gens[f]]
        families = {}
        for _ in range(TRIES):
            todo = [f for f in wanted if f not in families]
            if not todo:
                break
            read = {f: _READERS[f](session) for f in todo}
            after = generations.current(session)
            for family, rows in read.items():
                if after[family] == gens[family]:
                    families[family] = rows
                else:
                    gens[family] = after[family]
        return {'generations': gens, 'families': families,
                'dialect': session.get_bind().dialect.name}
