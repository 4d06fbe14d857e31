"""A device is handed out whole or in parts, never both at once.

A GPU offers itself whole (a PCI handle at the GPU's own address) and,
once partitioned, its parts: MIG slices, vGPUs, SR-IOV virtual
functions. They are the same silicon, so a bind of the whole excludes a
bind of any part, and the reverse, whatever capacity the inventory says
(a report may lag the hardware, and a layout change leaves bound parts
behind). The whole deployable is the one whose PCI handle is the
device's control path; a device without one (an FPGA's regions, each a
function of its own) has no whole, and its deployables bind
independently.

Binds check this under the device's row lock, which every bind of any
deployable of the device takes (db/arqs.py), with a locking read: the
latest committed handles, whatever snapshot the transaction started from
(MariaDB's repeatable read). Inventory reports record each part's whole
as its parent (``parent_id`` and ``root_id``, as Cyborg shows them).
"""

import sqlalchemy as sa

from cyborg_like.db import models

DEPLOYABLE = models.Deployable
HANDLE = models.AttachHandle


def whole_of(device):
    """The deployable that hands out ``device`` whole, or None (from the
    loaded rows: inventory reports load them all)."""
    cpid = device.controlpath_ids[0] if device.controlpath_ids else None
    if cpid is None or cpid.cpid_type != 'PCI':
        return None
    return next((deployable for deployable in device.deployables
                 if any(handle.attach_type == 'PCI'
                        and handle.attach_info == cpid.cpid_info
                        for handle in deployable.attach_handles)), None)


def held_beside(session, deployable):
    """``(deployable, 'whole' or 'in parts')`` sharing ``deployable``'s
    silicon that is bound (or whose handle awaits its release), or None.
    Two queries whatever the device's size; call it holding the device's
    row lock."""
    device = deployable.device
    cpid = device.controlpath_ids[0]
    if cpid.cpid_type != 'PCI':
        return None
    whole = session.scalar(
        sa.select(HANDLE.deployable_id)
        .where(HANDLE.deployable_id.in_(
            sa.select(DEPLOYABLE.id).where(
                DEPLOYABLE.device_id == device.id)),
            HANDLE.attach_type == 'PCI',
            HANDLE.attach_info == cpid.cpid_info).limit(1))
    if whole is None:
        return None
    # The whole excludes every part; a part excludes the whole.
    sharing = DEPLOYABLE.id != whole if deployable.id == whole \
        else DEPLOYABLE.id == whole
    held = session.scalar(
        sa.select(HANDLE.deployable_id)
        .where(HANDLE.deployable_id.in_(
            sa.select(DEPLOYABLE.id).where(
                DEPLOYABLE.device_id == device.id, sharing)),
            sa.or_(HANDLE.in_use == sa.true(),
                   HANDLE.release_pending == sa.true()))
        .order_by(HANDLE.id).limit(1).with_for_update())
    if held is None:
        return None
    return (session.get(models.Deployable, held),
            'whole' if held == whole else 'in parts')


def link(device):
    """Record each part's whole as its parent and root (flushed rows:
    ids are needed); returns whether any link changed."""
    whole = whole_of(device)
    changed = False
    for deployable in device.deployables:
        parent = None if whole is None or deployable is whole else whole.id
        if (deployable.parent_id, deployable.root_id) != (parent, parent):
            deployable.parent_id = deployable.root_id = parent
            changed = True
    return changed
