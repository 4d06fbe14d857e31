"""What every ARQ query shares: the row as the API shows it (its profile
name, handle and device health in one query), the project scope, and the
conditional moves of ``states.ARQ`` -- used by db/arqs.py (binding,
unbinding, deletion) and db/scheduling.py (standalone scheduling), which
import this module and never each other's privates.
"""

import json

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import models

ARQ = models.ExtARQ
HANDLE = models.AttachHandle


def get_all(session, uuids, project_id, for_update=False):
    query = scoped(sa.select(ARQ).where(ARQ.uuid.in_(uuids)), project_id)
    if for_update:
        query = query.with_for_update()
    arqs = session.scalars(query).all()
    missing = set(uuids) - {a.uuid for a in arqs}
    if missing:
        raise exception.ARQNotFound(uuid=sorted(missing)[0])
    return arqs


def attempt(session, uuid, attempt, event):
    """The ARQ, locked, if ``attempt`` is still its binding and ``event``
    may be applied; else BindingSuperseded."""
    arq = session.scalars(sa.select(ARQ).where(
        ARQ.uuid == uuid, ARQ.bind_attempt == attempt,
        ARQ.state.in_(states.ARQ.sources(event))).with_for_update()).first()
    if arq is None:
        raise exception.BindingSuperseded(uuid=uuid)
    return arq


def move(session, which, event, attempt, **values):
    """Apply ``event`` to the ARQ ``which`` selects, only from the states
    the event allows (and only within binding ``attempt`` when given).
    True when the row changed."""
    query = sa.update(ARQ).where(
        which, ARQ.state.in_(states.ARQ.sources(event)))
    if attempt is not None:
        query = query.where(ARQ.bind_attempt == attempt)
    values['state'] = states.ARQ.target(event)
    return session.execute(query.values(**values)).rowcount == 1


def transition(session, uuid, event, values, project_id):
    query = sa.update(ARQ).where(
        ARQ.uuid == uuid, ARQ.state.in_(states.ARQ.sources(event)))
    if project_id is not None:
        query = query.where(ARQ.project_id == project_id)
    values = dict(values, state=states.ARQ.target(event))
    if session.execute(query.values(**values)).rowcount == 1:
        return
    current = session.scalar(scoped(
        sa.select(ARQ.state).where(ARQ.uuid == uuid), project_id))
    if current is None:
        raise exception.ARQNotFound(uuid=uuid)
    raise exception.ARQBadState(uuid=uuid, state=current,
                                expected=list(states.ARQ.sources(event)))


def scoped(query, project_id):
    if project_id is None:
        return query
    return query.where(ARQ.project_id == project_id)


def select():
    # The profile name, the handle and its device's health come in the
    # same query as the ARQ.
    return (sa.select(ARQ, models.DeviceProfile.name, HANDLE,
                      models.Device.health)
            .join(models.DeviceProfile,
                  ARQ.device_profile_id == models.DeviceProfile.id)
            .outerjoin(HANDLE, ARQ.attach_handle_id == HANDLE.id)
            .outerjoin(models.Deployable,
                       models.Deployable.id == HANDLE.deployable_id)
            .outerjoin(models.Device,
                       models.Device.id == models.Deployable.device_id))


def handle_dict(handle):
    return {'uuid': handle.uuid, 'attach_type': handle.attach_type,
            'attach_info': json.loads(handle.attach_info)}


def row_to_dict(row):
    arq, profile_name, handle, device_health = row
    return to_dict(arq, profile_name, handle, device_health)


def to_dict(arq, profile_name, handle, device_health=None):
    bound = handle is not None and arq.state == states.BOUND
    info = json.loads(handle.attach_info) if bound else {}
    return {
        'uuid': arq.uuid,
        'state': arq.state,
        'state_reason': arq.state_reason,
        'device_profile_name': profile_name,
        'device_profile_group_id': arq.device_profile_group_id,
        'hostname': arq.hostname,
        'device_rp_uuid': arq.device_rp_uuid,
        'instance_uuid': arq.instance_uuid,
        'project_id': arq.project_id,
        'resource_class': arq.resource_class,
        'attach_handle_type': handle.attach_type if bound else '',
        'attach_handle_uuid': attach_handle_uuid(handle, info)
        if bound else None,
        'attach_handle_info': info,
        # The health of the device it holds: a workload learns here that
        # its device failed (db/health.py drains it meanwhile).
        'device_health': device_health if handle is not None
        and arq.state in states.HOLDING else None,
        # Notice that the lease lending the device ends (db/leases.py).
        'lease_ends_at': api.isotime(arq.lease_ends_at),
        # Notice that another project's lease of the device starts: the
        # binding is undone [leases] grace_seconds after it.
        'lease_starts_at': api.isotime(arq.lease_starts_at),
        'created_at': api.isotime(arq.created_at),
        'updated_at': api.isotime(arq.updated_at),
    }


def attach_handle_uuid(handle, info):
    """An MDEV handle's is the mdev's uuid: Nova's libvirt driver makes
    the mdev under that uuid where it does not exist yet."""
    if handle.attach_type == 'MDEV' and info.get('uuid'):
        return info['uuid']
    return handle.uuid


def handle_of(session, arq):
    """The attach handle the ARQ holds, or None."""
    if arq.attach_handle_id is None:
        return None
    return session.get(HANDLE, arq.attach_handle_id)


def whose(arq):
    """Added to the release jobs of unbind and delete, for the
    conductor's log (agents ignore them)."""
    return {'arq_uuid': arq.uuid, 'instance_uuid': arq.instance_uuid}
