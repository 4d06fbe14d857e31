"""Operations that drain the device they work on: firmware flashes
(firmware.py) and MIG layouts (mig_layouts.py).

Accepting one drains the device in the same transaction (status
``maintaining``: never bound, its inventory reserved in Placement by the
next sync) after checking that nothing holds or works on it; the
operation's ``result`` keeps what was asked and the status to restore,
and at the end what the agent read before and after (``old``, ``new``).
Success puts the device back as it was; failure leaves it drained for an
operator to look at, the reason on the operation.
"""

import json

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import read_model
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import devices
from cyborg_like.db import generations
from cyborg_like.db import host_changes
from cyborg_like.db import models
from cyborg_like.db import operations

DRAINED = 'maintaining'


def locked(session, uuid):
    """The device, its row locked for the rest of the transaction."""
    found = session.scalar(sa.select(models.Device.id).where(
        models.Device.uuid == uuid).with_for_update())
    if found is None:
        raise exception.DeviceNotFound(uuid=uuid)
    return session.get(models.Device, found)


def drain(session, device, kind, what, project_id, conductor_uuid, record,
          job):
    """Check ``device`` is idle, drain it and add its operation of type
    ``kind`` (``what`` names the work in refusals, e.g. "flashing it");
    ``record`` starts the operation's result, ``job`` is what the agent
    is sent beside the device. Returns (agent job, operation dict, device
    dict)."""
    _check_idle(session, device, what)
    record = dict(record, previous_status=device.status)
    _set_status(session, device, DRAINED)
    operation = operations.add(session, kind, device.uuid, project_id,
                               conductor_uuid, hostname=device.hostname)
    operation.result = json.dumps(record)
    job = dict(job, hostname=device.hostname,
               driver_name=_driver_name(device, what),
               controlpath_id=device.controlpath_ids[0].to_wire(),
               device_uuid=device.uuid)
    session.flush()
    return job, operations.to_dict(operation), \
        devices.dicts(session, [device])[0]


def finish(operation_uuid, device_uuid, found):
    """The agent did the work: record ``found`` ({'old': ..., 'new': ...})
    and put the device back as it was. False when the operation had been
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
        # The operation no longer drains the device, even when its status
        # stays (it was disabled before): the devices show it.
        generations.touch(read_model.DEVICES)
        return True


def fail(operation_uuid, reason):
    """The work failed: the reason on the operation, the device left
    drained."""
    return operations.apply(operation_uuid, states.FAIL, reason)


def _check_idle(session, device, what):
    handles = [h for d in device.deployables for h in d.attach_handles]
    if any(h.in_use or h.release_pending for h in handles):
        raise exception.Conflict(
            'Device %s is in use by accelerator requests; unbind them '
            'before %s.' % (device.uuid, what))
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
        host_changes.mark_dirty(session, [device.hostname])


def _driver_name(device, what):
    names = {d.driver_name for d in device.deployables if d.driver_name}
    if len(names) != 1:
        raise exception.Conflict(
            'Device %s reports no single driver (%s); no agent driver can '
            'be asked to do the work of %s.'
            % (device.uuid, ', '.join(sorted(names)) or 'none', what))
    return names.pop()


def _result(session, operation_uuid):
    text = session.scalar(sa.select(models.Operation.result).where(
        models.Operation.uuid == operation_uuid))
    return json.loads(text) if text else {}
