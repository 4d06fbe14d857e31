"""Driver operations: install, upgrade, remove or verify a driver family
on a host, as an operation that drains the devices it drives.

A device is *drained* while ``drained_by`` names an operation: it is not
bound (db/arqs.py) and its Placement inventory is reserved
(conductor/placement.py). An operation that succeeds returns the devices
it drained to service; one that fails or is cancelled after its playbook
started leaves them drained with the reason, since their driver is then in
an unknown state -- a later operation on the family (``verify`` after a
fix) takes them over and returns them on success.
"""

import json

import sqlalchemy as sa

from cyborg_like.common import driver_families
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import host_changes
from cyborg_like.db import hosts
from cyborg_like.db import models
from cyborg_like.db import operations

OP = models.Operation
DEVICE = models.Device
ARQ = models.ExtARQ

# Progress keeps the latest events only: a long playbook must not grow
# the row without bound.
EVENTS_KEPT = 50


def start(hostname, request, project_id, conductor_uuid=None):
    """Record a pending driver operation on ``hostname`` and drain the
    devices of the family, in one transaction.

    ``request``: family, action, parameters (the family's, version
    included; common/driver_vars.py), force, wait_for_release (seconds, or
    None) and timeout. Refused while another driver
    operation runs on the host, and while accelerator requests are bound
    to the family's devices unless the request forces or waits. Returns
    (operation, job for the agent).
    """
    with api.writer() as session:
        return start_in(session, hostname, request, project_id,
                        conductor_uuid)


def start_in(session, hostname, request, project_id, conductor_uuid=None):
    """``start`` within the caller's transaction (a rollout's target,
    db/rollouts.py, begins with it)."""
    family = request['family']
    _lock_host(session, hostname)
    if not hosts.agent_at_least(session, hostname, hosts.RUNS_PLAYBOOKS):
        raise exception.Conflict(
            'The agent of host %s is too old to run driver playbooks; '
            'upgrade it first.' % hostname)
    # One driver operation a host; the host's programming and flashing
    # are the device checks' below.
    running = session.scalar(sa.select(OP.uuid).where(
        OP.hostname == hostname, OP.state.in_(states.UNFINISHED),
        OP.type.in_(driver_families.OPERATION_TYPES)))
    if running is not None:
        raise exception.DriverOperationInProgress(hostname=hostname,
                                                  operation=running)
    device_ids = _family_devices(session, hostname, family)
    _check_no_device_work(session, device_ids)
    holding = _holding(session, sa.select(models.Deployable.id).where(
        models.Deployable.device_id.in_(device_ids))
        .with_for_update())
    if holding and not (request.get('force')
                        or request.get('wait_for_release')):
        raise exception.DevicesInUse(hostname=hostname, family=family,
                                     arqs=', '.join(holding))
    params = dict(request, devices=len(device_ids))
    if request.get('force'):
        # Recorded: who forced it is in the request id's logs; what
        # was bound is here.
        params['forced_over'] = holding
    operation = operations.add(
        session, driver_families.OPERATION_PREFIX + request['action'],
        driver_families.host_uuid(hostname), project_id, conductor_uuid,
        hostname=hostname)
    operation.params = json.dumps(params)
    _drain(session, device_ids, operation.uuid,
           'Driver operation %s (%s %s) in progress.' % (
               operation.uuid, request['action'], family))
    host_changes.mark_dirty(session, [hostname])
    job = {'operation_uuid': operation.uuid, 'hostname': hostname,
           'family': family, 'action': request['action'],
           'parameters': request.get('parameters') or {},
           'timeout': request.get('timeout')}
    return to_dict(operation), job


def holding_arqs(operation_uuid):
    """Accelerator requests still bound to devices the operation drained."""
    with api.reader() as session:
        return _holding(session, sa.select(models.Deployable.id).join(
            DEVICE).where(DEVICE.drained_by == operation_uuid))


def _locked(session, uuid):
    """The operation's row, locked for this transaction; NotFound if none."""
    operation = session.scalars(sa.select(OP).where(OP.uuid == uuid)
                                .with_for_update()).first()
    if operation is None:
        raise exception.NotFound('Operation %s could not be found.' % uuid)
    return operation


def record_progress(uuid, batch):
    """Add a batch of the playbook's events to the operation's progress.

    ``batch``: ``events`` (each with ``event``, ``task``, ``time``) and
    ``counts`` (per kind, since the last batch). Returns the operation's
    state, so the agent stops a run that was cancelled or failed here.
    """
    with api.writer() as session:
        operation = _locked(session, uuid)
        if operation.state in states.UNFINISHED:
            operation.progress = json.dumps(
                merge_progress(_load(operation.progress), batch))
        return operation.state


def merge_progress(progress, batch):
    """``progress`` with ``batch`` added: counts summed, the latest task
    named, the last EVENTS_KEPT events kept."""
    counts = dict(progress.get('counts') or {})
    for kind, number in (batch.get('counts') or {}).items():
        counts[kind] = counts.get(kind, 0) + int(number)
    events = (list(progress.get('events') or [])
              + list(batch.get('events') or []))[-EVENTS_KEPT:]
    merged = dict(progress, counts=counts, events=events)
    if batch.get('task'):
        merged['task'] = batch['task']
    return merged


def finish(uuid, outcome):
    """Apply the end of a run the agent reports, in one transaction.

    ``outcome``: ``status`` (successful, failed, timeout, canceled,
    error), ``recap``, ``failed_task``, ``versions`` (the playbook's
    ``cyborg_like`` stats) and ``reason``. Returns the operation, or None
    when it had already ended (failed by the liveness sweep meanwhile).
    """
    status = outcome.get('status')
    with api.writer() as session:
        operation = session.scalars(sa.select(OP).where(OP.uuid == uuid)
                                    .with_for_update()).first()
        if operation is None or operation.state not in (
                states.RUNNING, states.CANCELLING):
            return None
        if status == 'successful' and operation.state == states.RUNNING:
            event, detail = states.SUCCEED, None
            _record_versions(session, operation, outcome.get('versions'))
            _undrain(session, uuid)
        elif status == 'canceled' or operation.state == states.CANCELLING:
            event = states.ABORT if operation.state == states.CANCELLING \
                else states.FAIL
            detail = 'Cancelled%s.' % _at(outcome)
            _keep_drained(session, uuid, detail)
        else:
            event, detail = states.FAIL, failure_reason(outcome)
            _keep_drained(session, uuid, detail)
        operation.state = states.OPERATION.target(event)
        operation.detail = detail
        operation.result = json.dumps(_result(outcome))
        host_changes.mark_dirty(session, [operation.hostname])
        session.flush()
        return to_dict(operation)


def end_untouched(uuid, event, detail):
    """End an operation whose playbook never started (its wait for
    releases timed out, it was cancelled before, or the agent refused it):
    the devices go back to service as they were. True when it ended."""
    machine = states.OPERATION
    with api.writer() as session:
        ended = session.execute(
            sa.update(OP).where(OP.uuid == uuid,
                                OP.state.in_(machine.sources(event)))
            .values(state=machine.target(event), detail=detail)).rowcount
        if ended:
            hostname = session.scalar(sa.select(OP.hostname).where(
                OP.uuid == uuid))
            _undrain(session, uuid)
            host_changes.mark_dirty(session, [hostname])
        return ended == 1


def request_cancel(uuid):
    """pending/running -> cancelling; returns the operation. Only driver
    operations can be cancelled (an FPGA being programmed cannot)."""
    machine = states.OPERATION
    with api.writer() as session:
        operation = _locked(session, uuid)
        if not driver_families.is_driver_operation(operation.type):
            raise exception.OperationNotCancellable(
                uuid=uuid, reason='only driver operations can be.')
        if not machine.allows(operation.state, states.CANCEL):
            raise exception.OperationNotCancellable(
                uuid=uuid, reason='it is %s.' % operation.state)
        operation.state = machine.target(states.CANCEL)
        session.flush()
        return to_dict(operation)


def failure_reason(outcome):
    status = outcome.get('status')
    if status == 'timeout':
        return 'The playbook timed out%s.' % _at(outcome)
    if outcome.get('failed_task'):
        task = outcome['failed_task']
        return 'The playbook failed at task "%s": %s' % (
            task.get('name'), task.get('message') or 'no message')
    return 'The playbook ended %s: %s' % (
        status or 'unexpectedly', outcome.get('reason') or 'no reason given')


def to_dict(operation):
    return dict(operations.to_dict(operation))


def _at(outcome):
    task = (outcome.get('failed_task') or {}).get('name') \
        or outcome.get('last_task')
    return ' at task "%s"' % task if task else ''


def _result(outcome):
    return {key: outcome.get(key) for key in (
        'status', 'rc', 'recap', 'failed_task', 'versions', 'artifacts')}


def _record_versions(session, operation, versions):
    """The host's record of installed versions, after a success."""
    params = _load(operation.params)
    family = params.get('family')
    host = session.scalars(sa.select(models.Host).where(
        models.Host.hostname == operation.hostname).with_for_update()).first()
    if host is None or not family:
        return
    installed = _load(host.driver_versions)
    after = (versions or {}).get('version_after')
    if params.get('action') == driver_families.REMOVE or not after:
        installed.pop(family, None)
    else:
        installed[family] = str(after)
    host.driver_versions = json.dumps(installed, sort_keys=True)


def _lock_host(session, hostname):
    found = session.scalar(sa.select(models.Host.id).where(
        models.Host.hostname == hostname).with_for_update())
    if found is None:
        raise exception.HostNotFound(hostname=hostname)


def _family_devices(session, hostname, family):
    return session.scalars(sa.select(DEVICE.id).where(
        DEVICE.hostname == hostname,
        sa.func.lower(DEVICE.vendor).in_(driver_families.vendors(family)))
        .order_by(DEVICE.id)).all()


def _check_no_device_work(session, device_ids):
    """Programming or flashing one of the devices must end first."""
    targets = sa.union(
        sa.select(DEVICE.uuid).where(DEVICE.id.in_(device_ids)),
        sa.select(models.Deployable.uuid).where(
            models.Deployable.device_id.in_(device_ids)))
    busy = session.scalar(sa.select(OP.uuid).where(
        OP.target_uuid.in_(targets), OP.state.in_(states.UNFINISHED)))
    if busy is not None:
        raise exception.Conflict(
            'Operation %s is under way on a device of this driver family; '
            'wait for it to end.' % busy)


def _holding(session, deployables):
    """Uuids of ARQs binding (or bound) to ``deployables`` (a select of
    ids; locking it keeps new bindings out until the drain commits)."""
    ids = session.scalars(deployables).all()
    if not ids:
        return []
    return session.scalars(sa.select(ARQ.uuid).where(
        ARQ.deployable_id.in_(ids), ARQ.state.in_(states.HOLDING))
        .order_by(ARQ.uuid)).all()


def _drain(session, device_ids, operation_uuid, reason):
    if device_ids:
        session.execute(
            sa.update(DEVICE).where(DEVICE.id.in_(device_ids))
            .values(drained_by=operation_uuid, drain_reason=reason)
            .execution_options(synchronize_session=False))


def _undrain(session, operation_uuid):
    session.execute(
        sa.update(DEVICE).where(DEVICE.drained_by == operation_uuid)
        .values(drained_by=None, drain_reason=None)
        .execution_options(synchronize_session=False))


def _keep_drained(session, operation_uuid, detail):
    operations.keep_drained(session, [operation_uuid], detail)


def _load(text):
    return json.loads(text) if text else {}
