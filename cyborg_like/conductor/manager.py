"""The conductor's RPC endpoint: the one way to the database."""

import time
import uuid as uuid_lib

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import uuidutils

from cyborg_like.common import context as context_lib
from cyborg_like.common import describe
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.catalog import store as store_lib
from cyborg_like.common import states
from cyborg_like.conductor import availability
from cyborg_like.conductor import driver_operations
from cyborg_like.conductor import images
from cyborg_like.conductor import leases
from cyborg_like.conductor import metrics
from cyborg_like.conductor import nova
from cyborg_like.conductor.placement import claims as placement_claims
from cyborg_like.conductor import quotas as quota_limits
from cyborg_like.conductor import rollouts
from cyborg_like.conductor import rpcapi
from cyborg_like.db import arqs
from cyborg_like.db import attributes
from cyborg_like.db import bitstreams
from cyborg_like.db import changes
from cyborg_like.db import deployables
from cyborg_like.db import device_profiles
from cyborg_like.db import devices
from cyborg_like.db import drained
from cyborg_like.db import firmware
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import leases as lease_db
from cyborg_like.db import mig_layouts
from cyborg_like.db import operations
from cyborg_like.db import quotas
from cyborg_like.db import rollouts as rollout_db
from cyborg_like.db import scheduling
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
        # Binding and programming finish here, after the RPC call that
        # started them has answered (a bounded workqueue.WorkQueue).
        self._workers = workers
        # The work accepted here names this conductor (db/conductors.py).
        self.conductor_uuid = conductor_uuid
        self.heartbeats = heartbeats
        self.nova = nova.NovaNotifier(conf)
        self.limits = quota_limits.Limits(conf)
        # Catalog image stores, for the URLs agents fetch images from.
        self.stores = store_lib.Stores(conf)
        self.driver_ops = driver_operations.DriverOperations(
            conf, agent_api, workers, conductor_uuid, _reason)
        # Placement allocations of standalone bindings (when configured).
        self.claims = placement_claims.Claims(conf)
        self.availability = availability.Feed(
            conf.site, conf.conductor.host_down_after,
            conf.leases.horizon_days)
        # Device leases (1.16) and their boundaries' periodic; ``clock``
        # (naive UTC now) is the tests' to compress time.
        self.leases = leases.Leases(conf, self._release, self.nova,
                                    notifier, clock)
        # Fleet rollouts (1.18) and their periodic (conductor/rollouts.py).
        self.rollouts = rollouts.Rollouts(
            conf, workers, {'bitstream': self._program_for_rollout,
                            'firmware': self._flash,
                            'driver': self.driver_ops.carry_out},
            conductor_uuid, notifier, clock)

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
                                   images.with_url(self.stores, job),
                                   self.conf.conductor.agent_timeout)
        except Exception as error:
            LOG.warning('Programming %s failed after %.1f s: %s', what,
                        time.monotonic() - accepted, _reason(error))
            operations.apply(operation_uuid, states.FAIL, _reason(error))
            metrics.operation_finished('program', states.FAILED)
            return
        deployables.set_bitstream(job['deployable_uuid'],
                                  job['bitstream_id'])
        operations.apply(operation_uuid, states.SUCCEED)
        metrics.operation_finished('program', states.SUCCEEDED)
        LOG.info('Programming %s finished in %.1f s', what,
                 time.monotonic() - accepted)

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
        with self._workers.reserve(1) as submit:
            job, operation, device = firmware.start_flash(
                uuid, image_uuid, context.project_id, self.conductor_uuid)
            submit(self._flash, context, operation['uuid'], job)
        return {'device': device, 'operation': operation}

    def _flash(self, context, operation_uuid, job):
        self._run_drained(
            operation_uuid, job, 'Flashing device %s with image %s' % (
                job['device_uuid'], job['image']['uuid']),
            lambda: self.agent_api.flash_firmware(
                context, job['hostname'], images.with_url(self.stores, job),
                self.conf.conductor.firmware_timeout),
            firmware.TYPE)

    # MIG layouts (1.11): an operation on a GPU, drained like a flash.
    def apply_mig_layout(self, context, uuid, layout):
        """Drain the GPU and start cutting it into ``layout`` (MIG profile
        names; [] for the whole GPU)."""
        with self._workers.reserve(1) as submit:
            job, operation, device = mig_layouts.start(
                uuid, layout, context.project_id, self.conductor_uuid)
            submit(self._run_drained, operation['uuid'], job,
                   'Applying MIG layout [%s] to GPU %s' % (
                       ', '.join(layout), job['device_uuid']),
                   lambda: self.agent_api.apply_mig_layout(
                       context, job['hostname'], job,
                       self.conf.conductor.mig_layout_timeout),
                   mig_layouts.TYPE)
        return {'device': device, 'operation': operation}

    # What a rollout's targets start (conductor/rollouts.py).
    def _program_for_rollout(self, context, operation_uuid, job):
        self._program(context, operation_uuid, job, time.monotonic())

    def _run_drained(self, operation_uuid, job, what, work, kind=None):
        """Run ``work()`` (the agent's call) for a draining operation (of
        type ``kind``) and record how it ended."""
        if not operations.apply(operation_uuid, states.START):
            return      # failed by the sweep before it ran
        started = time.monotonic()
        try:
            found = work()
        except Exception as error:
            LOG.warning('%s on host %s failed after %.1f s (operation %s); '
                        'the device stays drained: %s', what,
                        job['hostname'], time.monotonic() - started,
                        operation_uuid, _reason(error))
            drained.fail(operation_uuid, _reason(error))
            metrics.operation_finished(kind, states.FAILED)
            return
        if not drained.finish(operation_uuid, job['device_uuid'], found):
            LOG.warning('%s ended after its operation %s had been failed; '
                        'the device stays drained', what, operation_uuid)
        else:
            LOG.info('%s succeeded in %.1f s (operation %s)', what,
                     time.monotonic() - started, operation_uuid)
            metrics.operation_finished(kind, states.SUCCEEDED)

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

    # Accelerator requests.
    def create_arqs(self, context, profile_name, group_id,
                    max_accelerators=None):
        profile = device_profiles.get(name=profile_name)
        wanted = {rc for group in profile['groups']
                  for rc in arqs.accelerators_in(group)}
        limits = self.limits.for_creation(context.project_id, wanted)
        return arqs.create(profile_name, context.project_id, group_id,
                           limits, max_accelerators=max_accelerators,
                           own_limits=self.limits.local)

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

    def unbind_arqs(self, context, uuids, unbind_bound=True):
        """``unbind_bound``: the API's policy decision
        (cyborg:arq:unbind_bound, 1.25); an API from before 1.25 decided
        the whole unbind by cyborg:arq:update alone."""
        started = time.monotonic()
        released = arqs.unbind(uuids, project_id=project_scope(context),
                               unbind_bound=unbind_bound)
        self._release(context, released)
        self.claims.sync_stale(uuids)
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
        claimed = scheduling.claimed_consumers(
            uuids, instance_uuid, project_scope(context)) \
            if self.claims.enabled else ()
        released = arqs.delete(uuids=uuids, instance_uuid=instance_uuid,
                               project_id=project_scope(context),
                               delete_bound=delete_bound)
        self._release(context, released)
        self.claims.release(claimed)
        for item in released:
            LOG.info('ARQ %s of instance %s deleted while bound on host %s: '
                     'handle %s released (%.1f ms)', item['arq_uuid'],
                     item['instance_uuid'], item['hostname'],
                     describe.attach_handle(item['attach_handle']),
                     _ms(started))
        LOG.info('Deleted %s (%.1f ms)', 'ARQs %s' % ', '.join(uuids)
                 if uuids is not None else 'the ARQs of instance %s'
                 % instance_uuid, _ms(started))

    # Standalone scheduling (1.15): the conductor picks the deployable.
    def schedule_arq(self, context, uuid, instance_uuid, hostname=None,
                     preferences=None):
        """Accept a binding of ARQ ``uuid`` to consumer ``instance_uuid``
        on a deployable the conductor picks (on ``hostname`` when given;
        ``preferences``: strategy pack or spread, numa_node); answer the
        ARQ, BindStarted, and complete it in the background like a Nova
        binding (docs/scheduling.md)."""
        with self._workers.reserve(1) as submit:
            attempt, arq = scheduling.start(
                uuid, instance_uuid, hostname,
                project_id=project_scope(context),
                conductor_uuid=self.conductor_uuid)
            LOG.info('Scheduling ARQ %s for consumer %s on %s started', uuid,
                     instance_uuid, hostname or 'any host')
            submit(self._schedule, context, uuid, attempt, instance_uuid,
                   hostname, preferences or {}, arq['project_id'],
                   time.monotonic())
        return arq

    def _bind(self, context, uuid, attempt, instance_uuid, accepted, host,
              allocate=None, standalone=False):
        """Binding ``attempt`` of ARQ ``uuid``; every step is a no-op once
        the ARQ was unbound (or bound again) meanwhile. ``accepted`` (when
        the binding was accepted, time.monotonic()) and ``host`` are for
        the log. ``allocate()`` takes the handle (standalone scheduling
        picks the deployable there); Nova is told the outcome unless the
        binding is ``standalone``."""
        notify = (lambda *args, **kwargs: None) if standalone \
            else self.nova.binding_ended
        try:
            self._check_quota_still_holds(uuid)
            job = allocate() if allocate else self._allocate(uuid, attempt)
            if _same_bitstream(job['bitstream_id'],
                               job['current_bitstream_id']):
                job['bitstream_id'] = None      # already programmed
                job['image'] = None
            programmed = self.agent_api.prepare_attach_handle(
                context, job['hostname'], images.with_url(self.stores, job),
                self.conf.conductor.agent_timeout)
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
            metrics.bind_ended(accepted, succeeded=False)
            notify(uuid, instance_uuid, succeeded=False)
            return
        metrics.bind_ended(accepted, succeeded=True)
        LOG.info('ARQ %s bound to instance %s on host %s: handle %s%s in '
                 '%.1f s', uuid, instance_uuid, job['hostname'],
                 describe.attach_handle(job['attach_handle']),
                 ', programmed with bitstream %s' % programmed
                 if programmed else '', time.monotonic() - accepted)
        notify(uuid, instance_uuid, succeeded=True)

    def _allocate(self, uuid, attempt):
        """Take a handle for the binding; while the deployable's previous
        holder is being released (Nova places a new instance as soon as
        the old one is deleted), wait up to ``release_wait`` for it."""
        deadline = time.monotonic() + self.conf.conductor.release_wait
        pause = 0.05
        while True:
            try:
                return arqs.allocate(uuid, attempt,
                                     self.conf.conductor.host_down_after)
            except exception.ReleasePending:
                if time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _schedule(self, context, uuid, attempt, consumer, hostname,
                  preferences, project_id, accepted):
        try:
            self._bind(context, uuid, attempt, consumer, accepted,
                       hostname or '(any)', standalone=True,
                       allocate=lambda: self._pick(
                           context, uuid, attempt, consumer, hostname,
                           preferences, project_id))
        finally:
            # However it ended, Placement holds what the database says
            # the consumer holds (a no-op read once bound).
            if self.claims.enabled:
                self.claims.release([consumer])

    def _pick(self, context, uuid, attempt, consumer, hostname, preferences,
              project_id):
        """Take a handle of the best candidate still free (and, with
        Placement, claimed for ``consumer``); a candidate taken meanwhile
        or refused by Placement passes to the next. Waits up to
        ``release_wait`` when the only ones left are being released."""
        deadline = time.monotonic() + self.conf.conductor.release_wait
        pause, refused = 0.05, None
        down_after = self.conf.conductor.host_down_after
        while True:
            waiting = False
            for candidate in scheduling.candidates(
                    uuid, attempt, hostname, preferences, down_after):
                # A device lent to the caller's project is reserved in
                # Placement whole: the lease is its claim.
                claim = self.claims.enabled and not candidate.get('leased')
                scheduling.aim(uuid, attempt, candidate,
                               consumer if claim else None)
                try:
                    job = arqs.allocate(uuid, attempt, down_after)
                except exception.ReleasePending:
                    waiting = True
                    continue
                except exception.BindFailed:
                    continue        # taken meanwhile, or no longer usable
                refused = self._claim(context, uuid, attempt, consumer,
                                      hostname, project_id, candidate)
                if refused is None:
                    return job
            if not waiting or time.monotonic() + pause > deadline:
                raise exception.BindFailed(reason=_nothing_free(
                    hostname, preferences, refused))
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _claim(self, context, uuid, attempt, consumer, hostname, project_id,
               candidate):
        """Claim the candidate's provider for ``consumer`` in Placement;
        None when claimed (or Placement is not used), else why not, the
        handle given back."""
        if not self.claims.enabled or candidate.get('leased'):
            return None
        try:
            self.claims.sync(consumer, project_id, context.user_id)
            return None
        except placement_claims.Refused as error:
            LOG.info('Placement refused deployable %s (provider %s) on %s to '
                     'consumer %s of ARQ %s; trying the next: %s',
                     candidate['uuid'], candidate['rp_uuid'],
                     candidate['hostname'], consumer, uuid, error)
            self._release(context, scheduling.give_back(uuid, attempt,
                                                        hostname))
            return str(error)

    def _fail_interrupted_work(self):
        """Periodic (ConductorService): fail the bindings and operations
        that nobody will finish -- their conductor or host is down, or
        they outlived twice the agent timeout -- freeing what they hold."""
        limits = (self.conf.conductor.service_down_after,
                  self.conf.conductor.host_down_after,
                  2 * self.conf.conductor.agent_timeout)
        failed = arqs.fail_interrupted_binds(*limits)
        alone = scheduling.standalone([uuid for uuid, _, _ in failed])
        for uuid, instance_uuid, released in failed:
            LOG.warning('Binding of ARQ %s to instance %s was interrupted '
                        '(its conductor or host went down, or it took too '
                        'long); failed it', uuid, instance_uuid)
            self._release(context_lib.get_admin_context(), released)
            if uuid not in alone:
                self.nova.binding_ended(uuid, instance_uuid,
                                        succeeded=False)
        # Claims of standalone bindings that ended without their
        # conductor (it died) or whose removal failed: removed now.
        self.claims.sync_stale()
        for uuid in operations.fail_interrupted(
                *limits, older_than_by_type={
                    firmware.TYPE: 2 * self.conf.conductor.firmware_timeout,
                    mig_layouts.TYPE:
                        2 * self.conf.conductor.mig_layout_timeout}):
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


def _nothing_free(hostname, preferences, refused):
    where = ' on host %s' % hostname if hostname else ''
    if preferences.get('numa_node') is not None:
        where += ' on NUMA node %s' % preferences['numa_node']
    return ('No free deployable matches the request%s (resource class and '
            'traits of the profile group, device enabled and healthy, host '
            'up, a free attach handle)%s.' % (
                where, '; Placement refused the last one: %s' % refused
                if refused else ''))


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


def _utc(text, what):
    """ISO 8601 (naive: UTC) as naive UTC; the API checked its form, not
    that the date exists."""
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(text))
    except (ValueError, OverflowError):
        raise exception.Invalid('Invalid %s %r (an ISO 8601 date and '
                                'time expected).' % (what, text))
