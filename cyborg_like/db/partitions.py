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

HANDLE = models.AttachHandle


def whole_of(device):
    """The deployable that hands out ``device`` whole, or None."""
    cpid = device.controlpath_ids[0] if device.controlpath_ids else None
    if cpid is None or cpid.cpid_type != 'PCI':
        return None
    return next((deployable for deployable in device.deployables
                 if any(handle.attach_type == 'PCI'
                        and handle.attach_info == cpid.cpid_info
                        for handle in deployable.attach_handles)), None)


def sharing_silicon(deployable):
    """The other deployables of its device that ``deployable`` excludes:
    every part if it is the whole, the whole if it is a part."""
    device = deployable.device
    whole = whole_of(device)
    if whole is None:
        return []
    if whole is deployable:
        return [d for d in device.deployables if d is not whole]
    return [whole]


def held_beside(session, deployable):
    """The deployable sharing ``deployable``'s silicon that is bound (or
    whose handle awaits its release), or None. Call it holding the
    device's row lock."""
    others = {d.id: d for d in sharing_silicon(deployable)}
    if not others:
        return None
    held = session.scalars(
        sa.select(HANDLE.deployable_id)
        .where(HANDLE.deployable_id.in_(sorted(others)),
               sa.or_(HANDLE.in_use == sa.true(),
                      HANDLE.release_pending == sa.true()))
        .order_by(HANDLE.id).with_for_update()).first()
    return others.get(held)


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
