"""Flashing a device's firmware: accepting it and recording its end.

A flash is an operation of type ``firmware`` on a device (not a region):
accepting it drains the device in the same transaction (status
``maintaining``: not bound, its inventory reserved in Placement by the next
sync), after checking that the catalog image is active firmware for this
vendor and board and that nothing holds or works on the device. The
operation's ``result`` keeps the image, the status to restore and, at the
end, the firmware the agent read before and after. Success restores the
previous status; failure leaves the device drained, the reason on the
operation.
"""

import json

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import devices
from cyborg_like.db import models
from cyborg_like.db import operations
from cyborg_like.db import placement_sync

TYPE = 'firmware'
DRAINED = 'maintaining'
FLASHABLE_TYPES = ('FPGA',)


def start_flash(device_uuid, image_uuid, project_id, conductor_uuid=None):
    """(agent job, operation, device) of a newly accepted flash."""
    with api.writer() as session:
        device = _locked(session, device_uuid)
        image = _firmware(session, image_uuid)
        _check_fits(image, device)
        _check_idle(session, device)
        previous = device.status
        _set_status(session, device, DRAINED)
        operation = operations.add(session, TYPE, device.uuid, project_id,
                                   conductor_uuid)
        operation.result = json.dumps({'image_uuid': image.uuid,
                                       'previous_status': previous})
        job = {'hostname': device.hostname,
               'driver_name': _driver_name(device),
               'controlpath_id': device.controlpath_ids[0].to_wire(),
               'device_uuid': device.uuid,
               'image': {'uuid': image.uuid, 'sha256': image.sha256,
                         'size': image.size, 'store': image.store,
                         'location': image.location}}
        session.flush()
        return job, operations.to_dict(operation), devices.to_dict(device)


def finish_flash(operation_uuid, device_uuid, found):
    """The agent flashed: record ``found`` ({'old': ..., 'new': ...}) and
    put the device back as it was. False when the operation had been
    failed meanwhile (the sweep): the device then stays drained."""
    with api.writer() as session:
        record = _result(session, operation_uuid)
        record.update(old=found.get('old'), new=found.get('new'))
        if not operations.apply(operation_uuid, states.SUCCEED,
                                session=session, result=record):
            return False
        device = session.scalars(sa.select(models.Device).where(
            models.Device.uuid == device_uuid).with_for_update()).first()
        if device is not None and device.status == DRAINED:
            _set_status(session, device, record['previous_status'])
        return True


def fail_flash(operation_uuid, reason):
    """The flash failed: the reason on the operation, the device left
    drained for an operator to look at."""
    return operations.apply(operation_uuid, states.FAIL, reason)


def _locked(session, uuid):
    found = session.scalar(sa.select(models.Device.id).where(
        models.Device.uuid == uuid).with_for_update())
    if found is None:
        raise exception.DeviceNotFound(uuid=uuid)
    return session.get(models.Device, found)


def _firmware(session, image_uuid):
    image = session.scalars(sa.select(models.Bitstream).where(
        models.Bitstream.uuid == image_uuid)).first()
    if image is None:
        raise exception.BitstreamNotFound(uuid=image_uuid)
    if image.status != states.ACTIVE:
        raise exception.BitstreamBadState(uuid=image.uuid,
                                          status=image.status,
                                          expected=states.ACTIVE)
    if image.kind != 'firmware':
        raise exception.IncompatibleImage(
            'Image %s is a %s, not firmware: program it on a region '
            'instead.' % (image.uuid, image.kind))
    return image


def _check_fits(image, device):
    """The image's vendor must be the device's, its board (when it names
    one) the device's PCI device id: checked here, before any agent is
    called. The vendor's tool checks the rest (signatures, shell)."""
    if device.type not in FLASHABLE_TYPES:
        raise exception.Conflict('Device %s is a %s; only %s devices take '
                                 'firmware.' % (device.uuid, device.type,
                                                ', '.join(FLASHABLE_TYPES)))
    if image.vendor is None:
        raise exception.IncompatibleImage(
            'Image %s declares no vendor; firmware is flashed only onto '
            'cards of its declared vendor.' % image.uuid)
    if image.vendor.lower() != (device.vendor or '').lower():
        raise exception.IncompatibleImage(
            'Image %s is firmware of vendor %s; device %s is of vendor %s.'
            % (image.uuid, image.vendor, device.uuid, device.vendor))
    board = _board(device)
    if image.board and board and image.board.lower() != board.lower():
        raise exception.IncompatibleImage(
            'Image %s is firmware for board %s; device %s is board %s.'
            % (image.uuid, image.board, device.uuid, board))


def _check_idle(session, device):
    handles = [h for d in device.deployables for h in d.attach_handles]
    if any(h.in_use or h.release_pending for h in handles):
        raise exception.Conflict(
            'Device %s is in use by accelerator requests; unbind them '
            'before flashing it.' % device.uuid)
    targets = [device.uuid] + [d.uuid for d in device.deployables]
    busy = session.scalars(sa.select(models.Operation.uuid).where(
        models.Operation.target_uuid.in_(targets),
        models.Operation.state.in_(states.UNFINISHED))).first()
    if busy is not None:
        raise exception.Conflict(
            'Device %s (or one of its regions) has operation %s under way.'
            % (device.uuid, busy))


def _set_status(session, device, status):
    if device.status != status:
        device.status = status
        placement_sync.mark_dirty(session, [device.hostname])


def _board(device):
    try:
        info = json.loads(device.std_board_info or '{}')
    except ValueError:
        return None
    return info.get('device_id') if isinstance(info, dict) else None


def _driver_name(device):
    names = {d.driver_name for d in device.deployables if d.driver_name}
    if len(names) != 1:
        raise exception.Conflict(
            'Device %s reports no single driver (%s); its agent cannot '
            'flash it.' % (device.uuid, ', '.join(sorted(names)) or 'none'))
    return names.pop()


def _result(session, operation_uuid):
    text = session.scalar(sa.select(models.Operation.result).where(
        models.Operation.uuid == operation_uuid))
    return json.loads(text) if text else {}


