"""The conductor's RPC endpoint: the one way to the database."""

import uuid as uuid_lib

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg_like.common import context as context_lib
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.conductor import nova
from cyborg_like.conductor import quotas as quota_limits
from cyborg_like.conductor import rpcapi
from cyborg_like.conf import CONF
from cyborg_like.db import arqs
from cyborg_like.db import attributes
from cyborg_like.db import deployables
from cyborg_like.db import device_profiles
from cyborg_like.db import devices
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import operations
from cyborg_like.db import quotas

LOG = logging.getLogger(__name__)

# Roles that see every project's accelerator requests (Nova is "service").
_ALL_PROJECTS_ROLES = {'admin', 'service'}


def project_scope(context):
    """The project an ARQ query is limited to; None for admin/service."""
    if context.is_admin or _ALL_PROJECTS_ROLES & set(context.roles or ()):
        return None
    return context.project_id


@rpc.callers_errors_expected
class ConductorManager:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    # Every public method is an RPC method: keep lifecycle out of here
    # (ConductorService starts and stops the collector and the workers).

    def __init__(self, agent_api, workers, heartbeats):
        self.agent_api = agent_api
        # Binding and programming finish here, after the RPC call that
        # started them has answered.
        self._workers = workers
        self.heartbeats = heartbeats
        self.nova = nova.NovaNotifier(CONF)
        self.limits = quota_limits.Limits(CONF)

    # Agents.
    def report_inventory(self, context, host, devices, inventory_hash):
        """Apply the host's inventory; answer with the handles its
        workloads hold, which the agent restores after a restart."""
        summary = inventory.reconcile(host, devices, inventory_hash)
        LOG.info('Inventory of host %(host)s applied: %(summary)s',
                 {'host': host, 'summary': summary})
        return dict(summary, bound=arqs.bound_on(host))

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
        job, operation, deployable = deployables.start_program(
            uuid, bitstream_id, context.project_id)
        self._workers.submit(self._program, context, operation['uuid'], job)
        return {'deployable': deployable, 'operation': operation}

    def _program(self, context, operation_uuid, job):
        operations.set_state(operation_uuid, operations.RUNNING)
        try:
            self.agent_api.program(context, job['hostname'], job,
                                   CONF.conductor.agent_timeout)
        except Exception as error:
            LOG.warning('Programming %s failed: %s', job['deployable_uuid'],
                        _reason(error))
            operations.set_state(operation_uuid, operations.FAILED,
                                 _reason(error))
            return
        deployables.set_bitstream(job['deployable_uuid'],
                                  job['bitstream_id'])
        operations.set_state(operation_uuid, operations.SUCCEEDED)

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

    # Accelerator requests.
    def create_arqs(self, context, profile_name, group_id):
        profile = device_profiles.get(name=profile_name)
        wanted = {rc for group in profile['groups']
                  for rc in arqs.accelerators_in(group)}
        limits = self.limits.for_project(context.project_id, wanted)
        return arqs.create(profile_name, context.project_id, group_id,
                           limits)

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
        arqs.start_bind(bindings, project_id=project_scope(context))
        for uuid, fields in bindings.items():
            self._workers.submit(self._bind, context, uuid,
                                 fields['instance_uuid'])

    def unbind_arqs(self, context, uuids):
        released = arqs.unbind(uuids, project_id=project_scope(context))
        self._release(context, released)

    def delete_arqs(self, context, uuids=None, instance_uuid=None):
        released = arqs.delete(uuids=uuids, instance_uuid=instance_uuid,
                               project_id=project_scope(context))
        self._release(context, released)

    def _bind(self, context, uuid, instance_uuid):
        try:
            self._check_quota_still_holds(uuid)
            job = arqs.allocate(uuid, CONF.conductor.host_down_after)
            if _same_bitstream(job['bitstream_id'],
                               job['current_bitstream_id']):
                job['bitstream_id'] = None      # already programmed
            programmed = self.agent_api.prepare_attach_handle(
                context, job['hostname'], job, CONF.conductor.agent_timeout)
            if not arqs.finish_bind(uuid, programmed):
                LOG.warning('ARQ %s was unbound or deleted while binding',
                            uuid)
                return
        except Exception as error:
            reason = _reason(error)
            LOG.warning('Binding ARQ %s failed: %s', uuid, reason)
            self._release(context, arqs.fail_bind(uuid, reason) or [])
            self.nova.binding_ended(uuid, instance_uuid, succeeded=False)
            return
        LOG.info('ARQ %s bound', uuid)
        self.nova.binding_ended(uuid, instance_uuid, succeeded=True)

    def _fail_interrupted_binds(self):
        """Periodic (ConductorService): bindings whose conductor died."""
        # A binding takes at most one agent call; twice that is "gone".
        stale = arqs.fail_interrupted_binds(
            2 * CONF.conductor.agent_timeout)
        for uuid, instance_uuid, released in stale:
            LOG.warning('Binding of ARQ %s was interrupted; failed it', uuid)
            self._release(context_lib.get_admin_context(), released)
            self.nova.binding_ended(uuid, instance_uuid, succeeded=False)

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


def _reason(error):
    if isinstance(error, exception.CyborgLikeException):
        return error.message
    if isinstance(error, messaging.MessagingTimeout):
        return 'The agent did not answer in time.'
    if isinstance(error, messaging.RemoteError):
        return '%s: %s' % (error.exc_type, error.value)
    return '%s: %s' % (type(error).__name__, error)
