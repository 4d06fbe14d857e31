"""Flashing a device's firmware: accepting it (drained.py says how the
device is drained and put back).

A flash is an operation of type ``firmware`` on a device (not a region),
accepted after checking that the catalog image is active firmware for
this vendor and board. Its ``result`` keeps the image and, at the end, the
firmware the agent read before and after.
"""

import json

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import drained
from cyborg_like.db import models

TYPE = 'firmware'
FLASHABLE_TYPES = ('FPGA',)


def start_flash(device_uuid, image_uuid, project_id, conductor_uuid=None):
    """(agent job, operation, device) of a newly accepted flash."""
    with api.writer() as session:
        return flash_in(session, device_uuid, image_uuid, project_id,
                        conductor_uuid)


def flash_in(session, device_uuid, image_uuid, project_id,
             conductor_uuid=None):
    """``start_flash`` within the caller's transaction (a rollout starts
    its target's operation in the transaction that marks it begun)."""
    device = drained.locked(session, device_uuid)
    image = firmware_image(session, image_uuid)
    _check_fits(image, device)
    return drained.drain(
        session, device, TYPE, 'flashing it', project_id,
        conductor_uuid, {'image_uuid': image.uuid},
        {'image': {'uuid': image.uuid, 'sha256': image.sha256,
                   'size': image.size, 'store': image.store,
                   'location': image.location}})


def last_flashed(session, device_uuid):
    """The catalog image of the device's last successful flash, or None
    (what a rollout puts back)."""
    text = session.scalar(
        sa.select(models.Operation.result).where(
            models.Operation.target_uuid == device_uuid,
            models.Operation.type == TYPE,
            models.Operation.state == states.SUCCEEDED)
        .order_by(models.Operation.updated_at.desc(),
                  models.Operation.id.desc()).limit(1))
    return json.loads(text).get('image_uuid') if text else None


def firmware_image(session, image_uuid):
    """The active firmware image ``image_uuid`` of the catalog."""
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


def _board(device):
    try:
        info = json.loads(device.std_board_info or '{}')
    except ValueError:
        return None
    return info.get('device_id') if isinstance(info, dict) else None
