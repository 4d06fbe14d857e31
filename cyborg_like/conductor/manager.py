"""The conductor's RPC endpoint: the one way to the database."""

import time
import uuid as uuid_lib

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg_like.common import context as context_lib
from cyborg_like.common import describe
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.common import states
from cyborg_like.conductor import driver_operations
from cyborg_like.conductor import images
from cyborg_like.conductor import nova
from cyborg_like.conductor import quotas as quota_limits
from cyborg_like.conductor import rpcapi
from cyborg_like.conf import CONF
from cyborg_like.db import arqs
from cyborg_like.db import attributes
from cyborg_like.db import bitstreams
from cyborg_like.db import deployables
from cyborg_like.db import device_profiles
from cyborg_like.db import devices
from cyborg_like.db import firmware
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import operations
from cyborg_like.db import quotas

LOG = logging.getLogger(__name__)


def project_scope(context):
    """The project an ARQ or operation query is limited to; None for
    callers the API's policy (``all_projects_api``) let see them all."""
    if getattr(context, 'all_projects', False):
        return None
    return context.project_id


@rpc.callers_errors_expected
class ConductorManager:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    # Every public method is an RPC method: keep lifecycle out of here
    # (ConductorService starts and stops the collector and the workers).

    def __init__(self, agent_api, workers, heartbeats, conductor_uuid=None):
        self.agent_api = agent_api
        # Binding and programming finish here, after the RPC call that
        # started them has answered (a bounded workqueue.WorkQueue).
        self._workers = workers
        # The work accepted here names this conductor (db/conductors.py).
        self.conductor_uuid = conductor_uuid
        self.heartbeats = heartbeats
        self.nova = nova.NovaNotifier(CONF)
        self.limits = quota_limits.Limits(CONF)
        self.driver_ops = driver_operations.DriverOperations(
            agent_api, workers, conductor_uuid, _reason)

    # Agents.
    def report_inventory(self, context, host, devices, inventory_hash):
        """Apply the host's inventory; answer with the handles its
        workloads hold, which the agent restores after a restart."""
        summary = inventory.reconcile(host, devices, inventory_hash)
        LOG.info('Inventory of host %(host)s applied: %(summary)s',
                 {'host': host, 'summary': describe.counts(summary)})
        return dict(summary, bound=arqs.bound_on(host),
                    releasing=arqs.pending_releases(host))

    def handle_released(self, context, handle_uuid, erased):
        """The agent released a handle (erasing its region if ``erased``):
        it may be bound again."""
        arqs.confirm_release(handle_uuid, erased)

    def heartbeat(self, context, host, agent_version, inventory_hash,
                  health=None):
        """Accepted at once; written with others in the next batch."""
        self.heartbeats.add(context, host, agent_version, inventory_hash,
                            health or [])

    def list_hosts(self, context):
        return hosts.list_hosts(CONF.conductor.host_down_after)

    # Devices and deployables.
    def list_devices(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        return devices.list_devices(filters, limit, marker, sort_key,
                                    sort_dir)

    def get_device(self, context, uuid):
        return devices.get_device(uuid)

    def list_deployables(self, context, filters, limit, marker, sort_key,
                         sort_dir):
        return deployables.list_deployables(filters, limit, marker, sort_key,
                                            sort_dir)

    def get_deployable(self, context, uuid):
        return deployables.get_deployable(uuid)

    def set_device_status(self, context, uuid, status):
        return devices.set_status(uuid, status)

    def get_device_health(self, context, uuid, history_limit):
        return heartbeats.device_health(uuid, history_limit)

    def program_deployable(self, context, uuid, bitstream_id):
        """Start programming; the returned operation tells how it ends."""
        with self._workers.reserve(1) as submit:
            job, operation, deployable = deployables.start_program(
                uuid, bitstream_id, context.project_id, self.conductor_uuid)
            submit(self._program, context, operation['uuid'], job,
                   time.monotonic())
        return {'deployable': deployable, 'operation': operation}

    def _program(self, context, operation_uuid, job, accepted):
        if not operations.apply(operation_uuid, states.START):
            return      # failed by the sweep before it ran
        what = _programming(job, operation_uuid)
        LOG.info('Programming %s started', what)
        try:
            self.agent_api.program(context, job['hostname'],
                                   images.with_url(CONF, job),
                                   CONF.conductor.agent_timeout)
        except Exception as error:
            LOG.warning('Programming %s failed after %.1f s: %s', what,
                        time.monotonic() - accepted, _reason(error))
            operations.apply(operation_uuid, states.FAIL, _reason(error))
            return
        deployables.set_bitstream(job['deployable_uuid'],
                                  job['bitstream_id'])
        operations.apply(operation_uuid, states.SUCCEED)
        LOG.info('Programming %s finished in %.1f s', what,
                 time.monotonic() - accepted)

    # Driver operations (conductor/driver_operations.py).
    def get_host(self, context, hostname):
        return hosts.get_host(hostname, CONF.conductor.host_down_after)

    def start_driver_operation(self, context, hostname, request):
        """Accept install/upgrade/remove/verify of a driver family on a
        host; the returned operation tells how it ends."""
        return {'operation': self.driver_ops.start(context, hostname,
                                                   request)}

    def cancel_operation(self, context, uuid):
        return self.driver_ops.cancel(context, uuid)

    def report_driver_progress(self, context, operation_uuid, batch):
        """An agent's batch of playbook events; answers the operation's
        state (the agent stops a run no longer wanted)."""
        return self.driver_ops.progress(operation_uuid, batch)

    def finish_driver_operation(self, context, operation_uuid, outcome):
        self.driver_ops.finish(operation_uuid, outcome)
    # Firmware (1.9): an operation on a device, not a region.
    def flash_device_firmware(self, context, uuid, image_uuid):
        """Drain the device and start flashing it with catalog image
        ``image_uuid``; the returned operation tells how it ends."""
        with self._workers.reserve(1) as submit:
            job, operation, device = firmware.start_flash(
                uuid, image_uuid, context.project_id, self.conductor_uuid)
            submit(self._flash, context, operation['uuid'], job)
        return {'device': device, 'operation': operation}

    def _flash(self, context, operation_uuid, job):
        if not operations.apply(operation_uuid, states.START):
            return      # failed by the sweep before it ran
        started = time.monotonic()
        try:
            found = self.agent_api.flash_firmware(
                context, job['hostname'], images.with_url(CONF, job),
                CONF.conductor.firmware_timeout)
        except Exception as error:
            LOG.warning('Flashing device %s on host %s with image %s failed '
                        'after %.1f s (operation %s); it stays drained: %s',
                        job['device_uuid'], job['hostname'],
                        job['image']['uuid'], time.monotonic() - started,
                        operation_uuid, _reason(error))
            firmware.fail_flash(operation_uuid, _reason(error))
            return
        if not firmware.finish_flash(operation_uuid, job['device_uuid'],
                                     found):
            LOG.warning('Device %s was flashed after its operation %s had '
                        'been failed; it stays drained', job['device_uuid'],
                        operation_uuid)

    # Operations and attributes.
    def get_operation(self, context, uuid):
        return operations.get(uuid, project_id=project_scope(context))

    def list_operations(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        return operations.list_operations(
            filters, limit, marker, sort_key, sort_dir,
            project_id=project_scope(context))

    def list_attributes(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        return attributes.list_attributes(filters, limit, marker, sort_key,
                                          sort_dir)

    def get_attribute(self, context, uuid):
        return attributes.get(uuid)

    def create_attribute(self, context, deployable_id, key, value):
        return attributes.create(deployable_id, key, value)

    def delete_attribute(self, context, uuid):
        attributes.delete(uuid)

    # Device profiles.
    def create_device_profile(self, context, name, groups, description):
        return device_profiles.create(name, groups, description)

    def list_device_profiles(self, context, names, limit, marker, sort_key,
                             sort_dir):
        return device_profiles.list_profiles(names, limit, marker, sort_key,
                                             sort_dir)

    def get_device_profile(self, context, uuid=None, name=None):
        return device_profiles.get(uuid=uuid, name=name)

    def delete_device_profiles(self, context, uuid=None, names=None):
        device_profiles.delete(uuid=uuid, names=names or ())

    # The image catalog (1.8): the API streams data into the store; these
    # record what it did (docs/catalog.md).
    def create_bitstream(self, context, values):
        return bitstreams.create(values, context.project_id,
                                 context.user_id)

    def list_bitstreams(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        return bitstreams.list_bitstreams(filters, limit, marker, sort_key,
                                          sort_dir)

    def get_bitstream(self, context, uuid):
        return bitstreams.get(uuid)

    def begin_bitstream_upload(self, context, uuid):
        image, upload_id = bitstreams.begin_upload(uuid)
        return {'bitstream': image, 'upload_id': upload_id}

    def finish_bitstream_upload(self, context, uuid, upload_id, size,
                                sha256, store, location, declared):
        return bitstreams.finish_upload(uuid, upload_id, size, sha256,
                                        store, location, declared)

    def fail_bitstream_upload(self, context, uuid, upload_id, reason):
        return bitstreams.fail_upload(uuid, upload_id, reason)

    def delete_bitstream(self, context, uuid):
        return bitstreams.delete(uuid)

    # Accelerator requests.
    def create_arqs(self, context, profile_name, group_id,
                    max_accelerators=None):
        profile = device_profiles.get(name=profile_name)
        wanted = {rc for group in profile['groups']
                  for rc in arqs.accelerators_in(group)}
        limits = self.limits.for_project(context.project_id, wanted)
        return arqs.create(profile_name, context.project_id, group_id,
                           limits, max_accelerators=max_accelerators)

    def get_quota(self, context, project_id):
        used = quotas.usage(project_id)
        resources = set(used) | set(self.limits.known_resources())
        return {'project_id': project_id,
                'limits': self.limits.for_project(project_id, resources),
                'usage': used}

    def list_arqs(self, context, filters, limit, marker, sort_key, sort_dir):
        return arqs.list_arqs(filters, limit, marker, sort_key, sort_dir,
                              project_id=project_scope(context))

    def get_arq(self, context, uuid):
        return arqs.get(uuid, project_id=project_scope(context))

    def bind_arqs(self, context, bindings):
        """Accept the bindings now; complete them in the background."""
        with self._workers.reserve(len(bindings)) as submit:
            attempts = arqs.start_bind(bindings,
                                       project_id=project_scope(context),
                                       conductor_uuid=self.conductor_uuid)
            for uuid, fields in bindings.items():
                LOG.info('Binding ARQ %s to instance %s on host %s started',
                         uuid, fields['instance_uuid'], fields['hostname'])
                submit(self._bind, context, uuid, attempts[uuid],
                       fields['instance_uuid'], time.monotonic(),
                       fields['hostname'])

    def unbind_arqs(self, context, uuids):
        started = time.monotonic()
        released = arqs.unbind(uuids, project_id=project_scope(context))
        self._release(context, released)
        for item in released:
            LOG.info('ARQ %s unbound from instance %s on host %s: handle %s '
                     'released (%.1f ms)', item['arq_uuid'],
                     item['instance_uuid'], item['hostname'],
                     describe.attach_handle(item['attach_handle']),
                     _ms(started))

    def delete_arqs(self, context, uuids=None, instance_uuid=None,
                    delete_bound=False):
        """``delete_bound``: the API's policy decision
        (cyborg:arq:delete_bound); a caller from before 1.5 may not."""
        started = time.monotonic()
        released = arqs.delete(uuids=uuids, instance_uuid=instance_uuid,
                               project_id=project_scope(context),
                               delete_bound=delete_bound)
        self._release(context, released)
        for item in released:
            LOG.info('ARQ %s of instance %s deleted while bound on host %s: '
                     'handle %s released (%.1f ms)', item['arq_uuid'],
                     item['instance_uuid'], item['hostname'],
                     describe.attach_handle(item['attach_handle']),
                     _ms(started))
        LOG.info('Deleted %s (%.1f ms)', 'ARQs %s' % ', '.join(uuids)
                 if uuids is not None else 'the ARQs of instance %s'
                 % instance_uuid, _ms(started))

    def _bind(self, context, uuid, attempt, instance_uuid, accepted, host):
        """Binding ``attempt`` of ARQ ``uuid``; every step is a no-op once
        the ARQ was unbound (or bound again) meanwhile. ``accepted`` (when
        the binding was accepted, time.monotonic()) and ``host`` are for
        the log."""
        try:
            self._check_quota_still_holds(uuid)
            job = self._allocate(uuid, attempt)
            if _same_bitstream(job['bitstream_id'],
                               job['current_bitstream_id']):
                job['bitstream_id'] = None      # already programmed
                job['image'] = None
            programmed = self.agent_api.prepare_attach_handle(
                context, job['hostname'], images.with_url(CONF, job),
                CONF.conductor.agent_timeout)
            if not arqs.finish_bind(uuid, attempt, programmed):
                raise exception.BindingSuperseded(uuid=uuid)
        except exception.BindingSuperseded:
            # The handle this attempt took (if any) went back with the
            # unbind or delete that superseded it.
            LOG.info('ARQ %s was unbound or deleted while binding (after '
                     '%.1f s)', uuid, time.monotonic() - accepted)
            return
        except Exception as error:
            reason = _reason(error)
            LOG.warning('Binding ARQ %s to instance %s on host %s failed '
                        'after %.1f s: %s', uuid, instance_uuid, host,
                        time.monotonic() - accepted, reason)
            released = arqs.fail_bind(uuid, attempt, reason)
            if released is None:
                LOG.info('ARQ %s was unbound or deleted while binding', uuid)
                return
            self._release(context, released)
            self.nova.binding_ended(uuid, instance_uuid, succeeded=False)
            return
        LOG.info('ARQ %s bound to instance %s on host %s: handle %s%s in '
                 '%.1f s', uuid, instance_uuid, host,
                 describe.attach_handle(job['attach_handle']),
                 ', programmed with bitstream %s' % programmed
                 if programmed else '', time.monotonic() - accepted)
        self.nova.binding_ended(uuid, instance_uuid, succeeded=True)

    def _allocate(self, uuid, attempt):
        """Take a handle for the binding; while the deployable's previous
        holder is being released (Nova places a new instance as soon as
        the old one is deleted), wait up to ``release_wait`` for it."""
        deadline = time.monotonic() + CONF.conductor.release_wait
        pause = 0.05
        while True:
            try:
                return arqs.allocate(uuid, attempt,
                                     CONF.conductor.host_down_after)
            except exception.ReleasePending:
                if time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _fail_interrupted_work(self):
        """Periodic (ConductorService): fail the bindings and operations
        that nobody will finish -- their conductor or host is down, or
        they outlived twice the agent timeout -- freeing what they hold."""
        limits = (CONF.conductor.service_down_after,
                  CONF.conductor.host_down_after,
                  2 * CONF.conductor.agent_timeout)
        for uuid, instance_uuid, released in arqs.fail_interrupted_binds(
                *limits):
            LOG.warning('Binding of ARQ %s to instance %s was interrupted '
                        '(its conductor or host went down, or it took too '
                        'long); failed it', uuid, instance_uuid)
            self._release(context_lib.get_admin_context(), released)
            self.nova.binding_ended(uuid, instance_uuid, succeeded=False)
        for uuid in operations.fail_interrupted(
                *limits, older_than_by_type={
                    firmware.TYPE: 2 * CONF.conductor.firmware_timeout}):
            LOG.warning('Operation %s was interrupted; failed it', uuid)

    def _check_quota_still_holds(self, uuid):
        """A limit lowered since the ARQ was created stops its binding."""
        arq = arqs.get(uuid)
        rc, project = arq['resource_class'], arq['project_id']
        if not rc or project is None:
            return
        limit = self.limits.for_project(project, [rc]).get(rc)
        in_use = quotas.usage(project).get(rc, 0)
        if limit is not None and 0 <= limit < in_use:
            raise exception.BindFailed(reason=str(exception.QuotaExceeded(
                resource=rc, limit=limit, in_use=in_use, requested=1)))

    def _release(self, context, released):
        for item in released:
            self.agent_api.release_attach_handle(context, item['hostname'],
                                                 item)


def _same_bitstream(wanted, current):
    """Ids compare as UUIDs when they are (any case, dashes or not)."""
    if not wanted or not current:
        return False
    if uuidutils.is_uuid_like(wanted) and uuidutils.is_uuid_like(current):
        return uuid_lib.UUID(wanted) == uuid_lib.UUID(current)
    return wanted == current


def _programming(job, operation_uuid):
    return 'deployable %s (%s) on host %s with bitstream %s (operation %s)' \
        % (job['deployable_name'], job['deployable_uuid'], job['hostname'],
           job['bitstream_id'], operation_uuid)


def _ms(started):
    return (time.monotonic() - started) * 1000


def _reason(error):
    if isinstance(error, exception.CyborgLikeException):
        return error.message
    if isinstance(error, messaging.MessagingTimeout):
        return 'The agent did not answer in time.'
    if isinstance(error, messaging.RemoteError):
        return '%s: %s' % (error.exc_type, error.value)
    return '%s: %s' % (type(error).__name__, error)
