"""Attach handles taken and given back: a bind takes a free one with a
conditional UPDATE (whoever changes the row owns it); an unbind frees it
and, where the host's agent confirms releases, keeps it unbindable until
the agent says it is released (``confirm_release``).
"""

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.db import api
from cyborg_like.db import arq_rows
from cyborg_like.db import host_changes
from cyborg_like.db import hosts
from cyborg_like.db import models

HANDLE = models.AttachHandle


def take_handle(session, deployable):
    candidates = session.scalars(
        sa.select(HANDLE.id).where(HANDLE.deployable_id == deployable.id,
                                   HANDLE.in_use == sa.false(),
                                   HANDLE.release_pending == sa.false())
        .order_by(HANDLE.id)).all()
    for handle_id in candidates:
        taken = session.execute(
            sa.update(HANDLE).where(HANDLE.id == handle_id,
                                    HANDLE.in_use == sa.false())
            .values(in_use=True)).rowcount
        if taken == 1:
            host_changes.changed(session, [deployable.device.hostname])
            return session.get(HANDLE, handle_id)
    raise exception.BindFailed(
        reason='No free attach handle on deployable %s.' % deployable.uuid)


def free(session, handle):
    """Give ``handle`` back; what the agent must undo ([] for None).

    Where the host's agent confirms releases (agent 1.1 on), the handle
    stays unbindable until it does (``confirm_release``): releasing may
    erase the region, and a bind meanwhile would trust a stale bitstream.
    """
    if handle is None:
        return []
    deployable = session.get(models.Deployable, handle.deployable_id)
    device = deployable.device
    confirm = hosts.confirms_releases(session, device.hostname)
    session.execute(sa.update(HANDLE).where(HANDLE.id == handle.id)
                    .values(in_use=False, release_pending=confirm))
    host_changes.changed(session, [device.hostname])
    return [release_job(deployable, handle, confirm)]


def release_job(deployable, handle, confirm):
    return {'hostname': deployable.device.hostname,
            'driver_name': deployable.driver_name,
            'controlpath_id': deployable.device.controlpath_ids[0].to_wire(),
            'attach_handle': arq_rows.handle_dict(handle),
            'confirm': confirm}


# On Galera a conductor's write meets another's at COMMIT (DBDeadlock;
# tests/cluster/test_galera_node.py): run it again whole.
@api.retry_on_deadlock
def confirm_release(handle_uuid, erased):
    """The agent released the handle; ``erased``: its region lost its
    bitstream. The handle is bindable again. False if none was pending."""
    with api.writer() as session:
        handle = session.scalars(sa.select(HANDLE).where(
            HANDLE.uuid == handle_uuid,
            HANDLE.release_pending == sa.true()).with_for_update()).first()
        if handle is None:
            return False
        handle.release_pending = False
        host_changes.changed(session, [handle.deployable.device.hostname])
        if erased:
            session.execute(sa.update(models.Deployable).where(
                models.Deployable.id == handle.deployable_id)
                .values(bitstream_id=None))
        return True


def pending_releases(hostname):
    """Releases on ``hostname`` its agent has not confirmed (it may have
    been down): the agent carries them out again after a restart."""
    with api.reader() as session:
        rows = session.execute(
            sa.select(models.Deployable, HANDLE)
            .join(HANDLE, HANDLE.deployable_id == models.Deployable.id)
            .join(models.Device)
            .where(models.Device.hostname == hostname,
                   HANDLE.release_pending == sa.true())).all()
        return [release_job(d, h, True) for d, h in rows]
