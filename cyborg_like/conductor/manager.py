"""The conductor's RPC endpoint: the one way to the database.

A thin surface: each RPC method answers from one db/ query or hands the
call to the workflow that owns it -- conductor/binding.py (ARQs),
device_operations.py (program, flash, MIG layouts), driver_operations.py,
leases.py, rollouts.py, availability.py, quotas.py.
"""

import functools

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import timeutils

from cyborg_like.common import context as context_lib
from cyborg_like.common import describe
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.catalog import store as store_lib
from cyborg_like.common import states
from cyborg_like.conductor import availability
from cyborg_like.conductor import binding
from cyborg_like.conductor import device_operations
from cyborg_like.conductor import driver_operations
from cyborg_like.conductor import failure
from cyborg_like.conductor import leases
from cyborg_like.conductor import lost_answers
from cyborg_like.conductor import lost_work
from cyborg_like.conductor import nova
from cyborg_like.conductor.placement import claims as placement_claims
from cyborg_like.conductor import quotas as quota_limits
from cyborg_like.conductor import rollouts
from cyborg_like.conductor import rpcapi
from cyborg_like.db import arq_handles
from cyborg_like.db import arqs
from cyborg_like.db import attributes
from cyborg_like.db import bitstreams
from cyborg_like.db import changes
from cyborg_like.db import deployables
from cyborg_like.db import device_profiles
from cyborg_like.db import devices
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import leases as lease_db
from cyborg_like.db import operations
from cyborg_like.db import quotas
from cyborg_like.db import rollouts as rollout_db
from cyborg_like.db import snapshots
from cyborg_like.db import usage

LOG = logging.getLogger(__name__)

project_scope = context_lib.project_scope


@rpc.callers_errors_expected
class ConductorManager:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    # Every public method is an RPC method: keep lifecycle out of here
    # (ConductorService starts and stops the collector and the workers).

    def __init__(self, conf, agent_api, workers, heartbeats,
                 conductor_uuid=None, notifier=None, clock=None):
        self.conf = conf
        self.agent_api = agent_api
        # The work accepted here names this conductor (db/conductors.py);
        # it finishes in ``workers`` (a bounded workqueue.WorkQueue), after
        # the RPC call that accepted it has answered.
        self.conductor_uuid = conductor_uuid
        self.heartbeats = heartbeats
        self.nova = nova.NovaNotifier(conf)
        self.limits = quota_limits.Limits(conf)
        # Catalog image stores, for the URLs agents fetch images from.
        self.stores = store_lib.Stores(conf)
        self.driver_ops = driver_operations.DriverOperations(
            conf, agent_api, workers, conductor_uuid, failure.reason,
            notifier)
        # Placement allocations of standalone bindings (when configured).
        self.claims = placement_claims.Claims(conf)
        # ARQs bound and unbound; programs, flashes and MIG layouts.
        self.binding = binding.Binding(
            conf, agent_api, workers, conductor_uuid, self.nova,
            self.limits, self.claims, self.stores, notifier)
        self.device_ops = device_operations.DeviceOperations(
            conf, agent_api, workers, conductor_uuid, self.stores, notifier)
        self.availability = availability.Feed(
            conf.site, conf.conductor.host_down_after,
            conf.leases.horizon_days)
        # Device leases (1.16) and their boundaries' periodic; ``clock``
        # (naive UTC now) is the tests' to compress time.
        self.leases = leases.Leases(conf, self.binding.release, self.nova,
                                    notifier, clock)
        # Fleet rollouts (1.18) and their periodic (conductor/rollouts.py).
        self.rollouts = rollouts.Rollouts(
            conf, workers, {'bitstream': self.device_ops.program_for_rollout,
                            'firmware': self.device_ops.flash_job,
                            'driver': self.driver_ops.carry_out},
            conductor_uuid, notifier, clock)
        # Work accepted here that no job carries any more.
        self.lost_operations = lost_work.LostWork(
            workers, functools.partial(operations.unfinished_of,
                                       conductor_uuid),
            self.device_ops.fail_lost)
        self.lost_bindings = lost_work.LostWork(
            workers, functools.partial(arqs.binding_attempts_of,
                                       conductor_uuid),
            self.binding.fail_lost)

    # Agents.
    def report_inventory(self, context, host, devices, inventory_hash):
        """Apply the host's inventory; answer with the handles its
        workloads hold, which the agent restores after a restart."""
        summary = inventory.reconcile(host, devices, inventory_hash)
        LOG.info('Inventory of host %(host)s applied: %(summary)s',
                 {'host': host, 'summary': describe.counts(summary)})
        return dict(summary, bound=arqs.bound_on(host),
                    releasing=arq_handles.pending_releases(host))

    def handle_released(self, context, handle_uuid, erased):
        """The agent released a handle (erasing its region if ``erased``):
        it may be bound again."""
        arq_handles.confirm_release(handle_uuid, erased)

    def heartbeat(self, context, host, agent_version, inventory_hash,
                  health=None, urgent=False):
        """Accepted at once; written with others in the next batch, or
        before answering when ``urgent`` (1.13: a device's health changed).
        """
        self.heartbeats.add(context, host, agent_version, inventory_hash,
                            health or [], urgent=urgent)

    def list_hosts(self, context, limit=None, marker=None):
        return hosts.list_hosts(self.conf.conductor.host_down_after, limit,
                                marker)

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
        return self.device_ops.program(context, uuid, bitstream_id)

    # Driver operations (conductor/driver_operations.py).
    def get_host(self, context, hostname):
        return hosts.get_host(hostname, self.conf.conductor.host_down_after)

    def set_host_labels(self, context, hostname, labels):
        return hosts.set_labels(hostname, labels,
                                self.conf.conductor.host_down_after)

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
        return self.device_ops.flash(context, uuid, image_uuid)

    # MIG layouts (1.11): an operation on a GPU, drained like a flash.
    def apply_mig_layout(self, context, uuid, layout):
        """Drain the GPU and start cutting it into ``layout`` (MIG profile
        names; [] for the whole GPU)."""
        return self.device_ops.apply_mig_layout(context, uuid, layout)

    # Fleet rollouts (1.18, conductor/rollouts.py).
    def create_rollout(self, context, values, dry_run=False):
        return self.rollouts.create(context, values, dry_run)

    def list_rollouts(self, context, filters, limit, marker, sort_key,
                      sort_dir):
        return rollout_db.list_rollouts(filters, limit, marker, sort_key,
                                        sort_dir)

    def get_rollout(self, context, uuid):
        return rollout_db.get(uuid)

    def list_rollout_targets(self, context, uuid, filters, limit, marker):
        return rollout_db.list_targets(uuid, filters, limit, marker)

    def rollout_action(self, context, uuid, action):
        return self.rollouts.act(context, uuid, action)

    # Operations and attributes.
    def get_operation(self, context, uuid):
        return operations.get(uuid, project_id=project_scope(context))

    def list_operations(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        return operations.list_operations(
            filters, limit, marker, sort_key, sort_dir,
            project_id=project_scope(context))

    def list_changes(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        return changes.list_changes(filters, limit, marker, sort_key,
                                    sort_dir,
                                    project_id=project_scope(context))

    def get_reply(self, context, request_id, call_name):
        """Whether the call ``call_name`` of ``request_id`` was carried
        out, and its answer (1.28; for an API whose call got no answer):
        the one kept, else made again where it can be
        (conductor/lost_answers.py)."""
        return lost_answers.completed(
            changes.reply_of(request_id, call_name), call_name)

    # Usage accounting (1.27; db/usage.py).
    def get_usage(self, context, start=None, end=None, group_by=None,
                  project_id=None):
        """Device-seconds of [start, end) (ISO 8601; start: the first of
        this month, end: now). A caller limited to its project asks for
        its own usage only."""
        scope = project_scope(context)
        if scope is not None and project_id not in (None, scope):
            raise exception.Forbidden()
        return usage.summarize(
            _utc(start, 'start') if start else None,
            _utc(end, 'end') if end else None,
            group_by or usage.DEFAULT_GROUP_BY, project_id or scope)

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
    def create_device_profile(self, context, name, groups, description,
                              uuid=None):
        """``uuid``: the one the client posted, kept as Cyborg keeps it
        (1.25)."""
        return device_profiles.create(name, groups, description, uuid=uuid)

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

    # Accelerator requests (conductor/binding.py).
    def create_arqs(self, context, profile_name, group_id,
                    max_accelerators=None):
        return self.binding.create(context, profile_name, group_id,
                                   max_accelerators)

    def get_quota(self, context, project_id):
        return self._quota(project_id, quotas.usage(project_id))

    def _quota(self, project_id, used):
        resources = set(used) | self.limits.known_resources(project_id)
        limits, sources = self.limits.with_sources(project_id, resources)
        return {'project_id': project_id, 'limits': limits, 'usage': used,
                'sources': sources}

    # A project's own limits (1.23; the local driver's only).
    def set_quota(self, context, project_id, limits):
        """The quota with the usage as the limits took effect: creations
        answered later may have committed before them."""
        self.limits.check_local(project_id)
        return self._quota(project_id,
                           quotas.set_limits(project_id, limits))

    def delete_quota(self, context, project_id):
        self.limits.check_local(project_id)
        quotas.delete_limits(project_id)

    def get_availability(self, context, group_by, since, known_cursor,
                         at=None):
        """``at`` (1.16): the feed as leases make it at that time."""
        return self.availability.get(group_by, since, known_cursor, at)

    # Device leases (1.16, docs/leases.md): the lessee sees its own, the
    # lessor (all_projects) every one.
    def create_lease(self, context, values, preempt=False):
        """``preempt`` (1.24): the API's policy let the caller take
        devices other projects' workloads hold; an API too old to say is
        refused them (the safe side)."""
        return self.leases.create(context, values, preempt)

    def list_leases(self, context, filters, limit, marker, sort_key,
                    sort_dir):
        return lease_db.list_leases(filters, limit, marker, sort_key,
                                    sort_dir, self.leases.clock(),
                                    project_id=project_scope(context))

    def get_lease(self, context, uuid):
        return lease_db.get(uuid, self.leases.clock(),
                            project_id=project_scope(context))

    def end_lease(self, context, uuid, event):
        """``event``: give_back (the lessee, early) or revoke (the
        lessor; the API's policy allowed it)."""
        if event not in (states.GIVE_BACK, states.REVOKE):
            raise exception.Invalid('A lease ends by give_back or revoke.')
        return self.leases.end(context, uuid, event, project_scope(context))

    # The API's read model (1.17, docs/design.md).
    def read_model_snapshot(self, context, known):
        """The read model's generations, and the rows of each family
        whose generation is not ``known[family]``."""
        return snapshots.snapshot(known or {})

    def list_arqs(self, context, filters, limit, marker, sort_key, sort_dir):
        return arqs.list_arqs(filters, limit, marker, sort_key, sort_dir,
                              project_id=project_scope(context))

    def get_arq(self, context, uuid):
        return arqs.get(uuid, project_id=project_scope(context))

    def bind_arqs(self, context, bindings):
        """Accept the bindings now; complete them in the background."""
        self.binding.bind(context, bindings)

    def unbind_arqs(self, context, uuids, unbind_bound=True):
        """``unbind_bound``: the API's policy decision
        (cyborg:arq:unbind_bound, 1.25); an API from before 1.25 decided
        the whole unbind by cyborg:arq:update alone."""
        self.binding.unbind(context, uuids, unbind_bound)

    def delete_arqs(self, context, uuids=None, instance_uuid=None,
                    delete_bound=False):
        """``delete_bound``: the API's policy decision
        (cyborg:arq:delete_bound); a caller from before 1.5 may not."""
        self.binding.delete(context, uuids, instance_uuid, delete_bound)

    # Standalone scheduling (1.15): the conductor picks the deployable.
    def schedule_arq(self, context, uuid, instance_uuid, hostname=None,
                     preferences=None):
        """Accept a binding of ARQ ``uuid`` to consumer ``instance_uuid``
        on a deployable the conductor picks (docs/scheduling.md); answer
        the ARQ, BindStarted."""
        return self.binding.schedule(context, uuid, instance_uuid, hostname,
                                     preferences)

    def _fail_interrupted_work(self):
        """Periodic (ConductorService): fail the bindings and operations
        that nobody will finish, freeing what they hold."""
        self.binding.fail_interrupted()
        self.device_ops.fail_interrupted(
            binding.interrupted_limits(self.conf))
        self.lost_operations.sweep()
        self.lost_bindings.sweep()

    def _release(self, context, released):
        self.binding.release(context, released)












def _utc(text, what):
    """ISO 8601 (naive: UTC) as naive UTC; the API checked its form, not
    that the date exists."""
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(text))
    except (ValueError, OverflowError):
        raise exception.Invalid('Invalid %s %r (an ISO 8601 date and '
                                'time expected).' % (what, text))
