"""What a host offers changed: the two marks every writer of it leaves.

Within the writer's own transaction, so a mark exists exactly when the
change does:
- ``changed``: a row of the availability feed's change log
  (``availability_changes``, read by db/availability.py), for a change
  Placement does not show (a handle taken or given back, a lease's
  window written ahead);
- ``mark_dirty``: the host needs a Placement sync (``hosts.placement_dirty``,
  read by db/placement_sync.py), and is a change of the feed too.

A module of its own, importing only the models, so that the feature
modules that write (arqs, leases, inventory, devices, ...) and those that
read the marks (availability, placement_sync) all import it, and none of
them each other.
"""

import sqlalchemy as sa

from cyborg_like.db import models

CHANGE = models.AvailabilityChange
HOST = models.Host


def changed(session, hostnames):
    """Within the caller's transaction: what these hosts offer changed."""
    names = sorted({name for name in hostnames if name})
    if names:
        now = models.utcnow()
        session.execute(sa.insert(CHANGE), [
            {'hostname': name, 'changed_at': now} for name in names])


def mark_dirty(session, hostnames):
    """Within the caller's transaction: these hosts need a sync. What they
    offer changed too, as the availability feed shows it."""
    names = sorted(set(hostnames))
    changed(session, names)
    if names:
        session.execute(
            sa.update(HOST).where(HOST.hostname.in_(names))
            .values(placement_dirty=HOST.placement_dirty + 1)
            .execution_options(synchronize_session=False))


def mark_deployable_dirty(session, deployable_id=None, deployable_uuid=None):
    """Within the caller's transaction: the host of a deployable."""
    query = (sa.select(models.Device.hostname)
             .join(models.Deployable,
                   models.Deployable.device_id == models.Device.id))
    if deployable_id is not None:
        query = query.where(models.Deployable.id == deployable_id)
    else:
        query = query.where(models.Deployable.uuid == deployable_uuid)
    mark_dirty(session, session.scalars(query).all())
