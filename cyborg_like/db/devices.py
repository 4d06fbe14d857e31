"""Devices: list and show, each with the reasons it is drained
(db/drain_reasons.py: one query a page)."""

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import listing
from cyborg_like.db import api
from cyborg_like.db import drain_reasons
from cyborg_like.db import host_changes
from cyborg_like.db import models


def list_devices(filters, limit, marker=None, sort_key='created_at',
                 sort_dir='asc'):
    query = sa.select(models.Device)
    for name in listing.DEVICE_FILTERS:
        if filters.get(name) is not None:
            query = query.where(getattr(models.Device, name) == filters[name])
    with api.reader() as session:
        query = api.paginate(session, query, models.Device, limit, marker,
                             sort_key, sort_dir)
        return dicts(session, session.scalars(query).all())


def get_device(uuid):
    with api.reader() as session:
        device = session.scalars(sa.select(models.Device).where(
            models.Device.uuid == uuid)).first()
        if device is None:
            raise exception.DeviceNotFound(uuid=uuid)
        return dicts(session, [device])[0]


def dicts(session, found, fleet=False):
    """``found`` (Device rows; ``fleet``: every device) as dicts, with
    their drain reasons."""
    why = drain_reasons.of_devices(session, found, fleet)
    return [to_dict(device, why[device.uuid]) for device in found]


def to_dict(device, reasons):
    """``reasons``: why it is drained (db/drain_reasons.py), since
    conductor RPC 1.26."""
    return {
        'id': device.id,
        'uuid': device.uuid,
        'type': device.type,
        'vendor': device.vendor,
        'model': device.model,
        'std_board_info': device.std_board_info,
        'vendor_board_info': device.vendor_board_info,
        'hostname': device.hostname,
        'status': device.status,
        'drained_by': device.drained_by,
        'drain_reason': device.drain_reason,
        'drain_reasons': reasons,
        'created_at': api.isotime(device.created_at),
        'updated_at': api.isotime(device.updated_at),
    }


def set_status(uuid, status):
    """enabled, or maintaining (disabled: not bound)."""
    with api.writer() as session:
        device = session.scalars(sa.select(models.Device).where(
            models.Device.uuid == uuid)).first()
        if device is None:
            raise exception.DeviceNotFound(uuid=uuid)
        if device.status != status:
            device.status = status
            host_changes.mark_dirty(session, [device.hostname])
        session.flush()
        return dicts(session, [device])[0]
