"""Bringing a host's devices in the database in line with its report.

A report is the whole inventory of one host (see common/inventory.py). It
is applied in one transaction: records keep their uuids when they are still
reported, new ones are added, vanished ones removed, so a host that
re-reports, restarts or comes back after an outage never duplicates records.
"""


from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_like.common import inventory as wire
from cyborg_like.db import api
from cyborg_like.db import host_changes
from cyborg_like.db import hosts
from cyborg_like.db import models
from cyborg_like.db import partitions

LOG = logging.getLogger(__name__)


# On Galera a report can lose certification to another node's commit
# (DBDeadlock at COMMIT, the whole transaction rolled back): run it again
# whole rather than fail the agent's report.
@api.retry_on_deadlock
def reconcile(hostname, devices, inventory_hash):
    """Apply ``devices`` as the whole inventory of ``hostname``.

    Returns counts of devices added, updated, removed and kept because a
    workload still holds one of their attach handles.
    """
    wire.validate(hostname, devices)
    summary = {'added': 0, 'updated': 0, 'removed': 0, 'kept_in_use': 0}
    with api.writer() as session:
        existing = {_device_key(d): d for d in _load_host(session, hostname)}
        reported_devices = []
        for reported in devices:
            key = wire.canonical(reported['controlpath_id'])
            device = existing.pop(key, None)
            if device is None:
                device = _add_device(session, hostname, reported)
                summary['added'] += 1
            elif _update_device(session, device, reported):
                summary['updated'] += 1
            reported_devices.append(device)
        _link_partitions(session, reported_devices)
        for device in existing.values():
            if _in_use(device):
                LOG.warning('Device %s vanished from host %s but is in use; '
                            'keeping it', device.uuid, hostname)
                summary['kept_in_use'] += 1
                continue
            session.delete(device)
            summary['removed'] += 1
        hosts.set_inventory_hash(session, hostname, inventory_hash)
        if summary['added'] or summary['updated'] or summary['removed']:
            host_changes.mark_dirty(session, [hostname])
    return summary


def _load_host(session, hostname):
    # One query per table, whatever the number of devices.
    query = (sa.select(models.Device)
             .where(models.Device.hostname == hostname)
             .options(orm.selectinload(models.Device.controlpath_ids),
                      orm.selectinload(models.Device.deployables)
                      .selectinload(models.Deployable.attributes),
                      orm.selectinload(models.Device.deployables)
                      .selectinload(models.Deployable.attach_handles)))
    return session.scalars(query).all()


def _device_key(device):
    cpid = device.controlpath_ids[0]
    return wire.canonical(cpid.to_wire())


def _in_use(device):
    return any(h.in_use for d in device.deployables for h in d.attach_handles)


def _device_fields(reported):
    return {
        'type': reported['type'],
        'vendor': reported['vendor'],
        'model': reported['model'],
        'std_board_info': wire.canonical(reported.get('std_board_info', {})),
        'vendor_board_info': wire.canonical(
            reported.get('vendor_board_info', {})),
    }


def _deployable_fields(reported):
    return {
        'num_accelerators': reported['num_accelerators'],
        'driver_name': reported['driver_name'],
        'bitstream_id': reported.get('bitstream_id'),
    }


def _set_fields(obj, fields):
    changed = False
    for name, value in fields.items():
        if getattr(obj, name) != value:
            setattr(obj, name, value)
            changed = True
    return changed


def _add_device(session, hostname, reported):
    cpid = reported['controlpath_id']
    device = models.Device(uuid=uuidutils.generate_uuid(), hostname=hostname,
                           status='enabled',
                           **_device_fields(reported))
    device.controlpath_ids.append(models.ControlpathID(
        uuid=uuidutils.generate_uuid(), cpid_type=cpid['cpid_type'],
        cpid_info=wire.canonical(cpid['cpid_info'])))
    session.add(device)
    for dep in reported['deployables']:
        _add_deployable(device, dep, cpid)
    return device


def _link_partitions(session, devices):
    # Parents need ids: a flush only where a device has parts to link.
    if any(partitions.whole_of(d) is not None and len(d.deployables) > 1
           for d in devices):
        session.flush()
    for device in devices:
        partitions.link(device)


def _add_deployable(device, reported, cpid):
    deployable = models.Deployable(
        uuid=uuidutils.generate_uuid(), name=reported['name'],
        rp_uuid=wire.deployable_rp_uuid(device.hostname, cpid,
                                        reported['name']),
        **_deployable_fields(reported))
    device.deployables.append(deployable)
    _sync_attributes(deployable, reported.get('attributes', {}))
    _sync_handles(device, deployable, reported['attach_handles'])


def _update_device(session, device, reported):
    cpid = reported['controlpath_id']
    changed = _set_fields(device, _device_fields(reported))
    current = {d.name: d for d in device.deployables}
    for dep in reported['deployables']:
        deployable = current.pop(dep['name'], None)
        if deployable is None:
            _add_deployable(device, dep, cpid)
            changed = True
            continue
        changed |= _set_fields(deployable, _deployable_fields(dep))
        changed |= _sync_attributes(deployable, dep.get('attributes', {}))
        changed |= _sync_handles(device, deployable, dep['attach_handles'])
    changed |= _drop_vanished(
        device.deployables, current.values(), 'Deployable',
        lambda deployable: any(h.in_use for h in deployable.attach_handles))
    return changed


def _sync_attributes(deployable, reported):
    current = {a.key: a for a in deployable.attributes}
    changed = False
    for key, value in reported.items():
        attribute = current.pop(key, None)
        if attribute is None:
            deployable.attributes.append(models.Attribute(
                uuid=uuidutils.generate_uuid(), key=key, value=value,
                source='driver'))
            changed = True
        elif (attribute.value, attribute.source) != (value, 'driver'):
            attribute.value, attribute.source = value, 'driver'
            changed = True
    # What operators added through the API is theirs to remove.
    for attribute in current.values():
        if attribute.source == 'driver':
            deployable.attributes.remove(attribute)
            changed = True
    return changed


def _sync_handles(device, deployable, reported):
    current = {(h.attach_type, h.attach_info): h
               for h in deployable.attach_handles}
    changed = False
    for handle in reported:
        key = (handle['attach_type'], wire.canonical(handle['attach_info']))
        if current.pop(key, None) is None:
            deployable.attach_handles.append(models.AttachHandle(
                uuid=uuidutils.generate_uuid(), attach_type=key[0],
                attach_info=key[1], in_use=False,
                controlpath=device.controlpath_ids[0]))
            changed = True
    changed |= _drop_vanished(deployable.attach_handles, current.values(),
                              'Attach handle', lambda handle: handle.in_use)
    return changed


def _drop_vanished(records, vanished, what, in_use):
    """Remove the ``vanished`` records from ``records``, except those in
    use (an instance holds them); returns whether any went."""
    dropped = False
    for record in list(vanished):
        if in_use(record):
            LOG.warning('%s %s vanished but is in use; keeping it', what,
                        record.uuid)
            continue
        records.remove(record)
        dropped = True
    return dropped
