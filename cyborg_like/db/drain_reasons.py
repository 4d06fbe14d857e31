"""Why a device is drained: every cause at once, for a page of devices.

A drained device is not bound and its Placement inventory is reserved.
Four workflows drain devices, each keeping the fact where it works:

* ``driver_operation``: ``drained_by`` names the driver operation and
  ``drain_reason`` says why the device stays (db/driver_operations.py);
* ``firmware`` and ``mig_layout``: the operation flashing or re-cutting
  the device set its status ``maintaining`` (db/drained.py); while the
  status stays, the latest such operation on the device that did not
  succeed is the cause (one that failed leaves the device drained for an
  operator, who enables it when done);
* ``health``: its readings drained it (``service_state`` drained,
  db/health.py).

An operator's own ``disable`` is no drain: the device's ``status`` says
it. The API shows the causes on the device (microversion 2.4), the fleet
metrics count them. What is shown changes only with a write to the
device's row (a generation of the read model's devices family), except
the end of a flash or MIG layout that leaves the status as it was:
drained.py touches the family then.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_like.common import states
from cyborg_like.db import models

DRIVER_OPERATION = 'driver_operation'
FIRMWARE = 'firmware'
MIG_LAYOUT = 'mig_layout'
HEALTH = 'health'
# In the order a device's reasons are listed.
CAUSES = (DRIVER_OPERATION, FIRMWARE, MIG_LAYOUT, HEALTH)
# Operation types that drain the device they work on (db/firmware.py and
# db/mig_layouts.py TYPE; tests/unit/test_drain_reasons.py checks).
DRAINING_TYPES = (FIRMWARE, MIG_LAYOUT)
# The status those operations leave the device in (db/drained.py).
MAINTAINING = 'maintaining'

_TEXT = {
    FIRMWARE: 'Firmware operation %s drained the device; a failed flash '
              'leaves it drained (status maintaining) until an operator '
              'enables it.',
    MIG_LAYOUT: 'MIG layout operation %s drained the device; a failed '
                'layout leaves it drained (status maintaining) until an '
                'operator enables it.',
}
HEALTH_TEXT = ('Its health readings drained the device; [health] '
               'recovery_checks healthy readings in a row return it to '
               'service (GET /v2/devices/{uuid}/health says why).')


def reasons(device, draining=None):
    """The reasons ``device`` (a row with drained_by, drain_reason,
    service_state) is drained, as plain dicts; ``draining``: its
    ``(operation uuid, type)`` from ``draining_operations``, if any."""
    found = []
    if device.drained_by is not None:
        found.append(_reason(DRIVER_OPERATION, device.drained_by,
                             device.drain_reason))
    if draining is not None:
        uuid, kind = draining
        found.append(_reason(kind, uuid, _TEXT[kind] % uuid))
    if device.service_state == states.DRAINED:
        found.append(_reason(HEALTH, None, HEALTH_TEXT))
    return found


def _reason(cause, operation_uuid, text):
    return {'cause': cause, 'operation_uuid': operation_uuid,
            'reason': text}


def draining_operations(session, uuids=None):
    """``{device uuid: (operation uuid, type)}``: the flash or MIG layout
    draining each maintaining device (of ``uuids``; None: of the fleet),
    in one query. ``uuids`` empty: no query."""
    if uuids is not None and not uuids:
        return {}
    op, dev = models.Operation, models.Device
    # Its own alias: a subquery on the outer query's table would be
    # correlated to it.
    other = orm.aliased(models.Operation)
    latest = sa.select(sa.func.max(other.id)).where(
        other.type.in_(DRAINING_TYPES))
    query = (sa.select(dev.uuid, op.uuid, op.type)
             .join(op, op.target_uuid == dev.uuid)
             .where(dev.status == MAINTAINING, op.state != states.SUCCEEDED))
    if uuids is not None:
        latest = latest.where(other.target_uuid.in_(sorted(uuids)))
        query = query.where(dev.uuid.in_(sorted(uuids)))
    query = query.where(op.id.in_(latest.group_by(other.target_uuid)))
    return {row[0]: (row[1], row[2]) for row in session.execute(query)}


def of_devices(session, devices, fleet=False):
    """``{device uuid: [reasons]}`` of ``devices`` (rows with uuid,
    status, drained_by, drain_reason, service_state), in one query at
    most: only maintaining devices may have a draining operation.
    ``fleet``: ``devices`` are all of them (the query names none)."""
    maintaining = None if fleet else [
        d.uuid for d in devices if d.status == MAINTAINING]
    draining = draining_operations(session, maintaining)
    return {d.uuid: reasons(d, draining.get(d.uuid)) for d in devices}
