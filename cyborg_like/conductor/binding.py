"""Accelerator requests bound and unbound (docs/design.md, "Binding"):
created under the project's limits, bound in the background after the
RPC call that accepted them has answered (by Nova's choice of deployable,
or by the conductor's in standalone scheduling), unbound and deleted with
their handles released on the agents. Every database step is conditional
on the binding's attempt (db/arqs.py), so a binding superseded meanwhile
ends as a no-op.
"""

import time
import uuid as uuid_lib

from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg_like.common import context as context_lib
from cyborg_like.common import describe
from cyborg_like.common import exception
from cyborg_like.conductor import failure
from cyborg_like.conductor import images
from cyborg_like.conductor import metrics
from cyborg_like.conductor import notifications
from cyborg_like.conductor.placement import claims as placement_claims
from cyborg_like.db import arqs
from cyborg_like.db import device_profiles
from cyborg_like.db import quotas
from cyborg_like.db import scheduling

LOG = logging.getLogger(__name__)

project_scope = context_lib.project_scope


def interrupted_limits(conf):
    """(conductor down after, host down after, oldest work): when a
    binding or operation is one nobody will finish."""
    return (conf.conductor.service_down_after,
            conf.conductor.host_down_after,
            2 * conf.conductor.agent_timeout)


class Binding:
    def __init__(self, conf, agent_api, workers, conductor_uuid, nova,
                 limits, claims, stores, notifier=None):
        self.conf = conf
        self.agent_api = agent_api
        # Bindings finish here, after the RPC call that started them has
        # answered (a bounded workqueue.WorkQueue).
        self._workers = workers
        self.conductor_uuid = conductor_uuid
        self.nova = nova
        self.limits = limits
        # Placement allocations of standalone bindings (when configured).
        self.claims = claims
        self.stores = stores
        self.notifier = notifier

    def create(self, context, profile_name, group_id,
               max_accelerators=None):
        profile = device_profiles.get(name=profile_name)
        wanted = {rc for group in profile['groups']
                  for rc in arqs.accelerators_in(group)}
        limits = self.limits.for_creation(context.project_id, wanted)
        return arqs.create(profile_name, context.project_id, group_id,
                           limits, max_accelerators=max_accelerators,
                           own_limits=self.limits.local)

    def bind(self, context, bindings):
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
                       fields['hostname'], carries=attempts[uuid])

    def unbind(self, context, uuids, unbind_bound=True):
        """``unbind_bound``: the API's policy decision
        (cyborg:arq:unbind_bound, 1.25); an API from before 1.25 decided
        the whole unbind by cyborg:arq:update alone."""
        started = time.monotonic()
        released = arqs.unbind(uuids, project_id=project_scope(context),
                               unbind_bound=unbind_bound)
        self.release(context, released)
        self.claims.sync_stale(uuids)
        for item in released:
            self._told(context, notifications.ARQ_UNBOUND, item['arq_uuid'])
            LOG.info('ARQ %s unbound from instance %s on host %s: handle %s '
                     'released (%.1f ms)', item['arq_uuid'],
                     item['instance_uuid'], item['hostname'],
                     describe.attach_handle(item['attach_handle']),
                     _ms(started))

    def delete(self, context, uuids=None, instance_uuid=None,
               delete_bound=False):
        """``delete_bound``: the API's policy decision
        (cyborg:arq:delete_bound); a caller from before 1.5 may not."""
        started = time.monotonic()
        claimed = scheduling.claimed_consumers(
            uuids, instance_uuid, project_scope(context)) \
            if self.claims.enabled else ()
        # Read before: a deleted ARQ's payload is what it was.
        doomed = self._to_delete(context, uuids, instance_uuid)
        released = arqs.delete(uuids=uuids, instance_uuid=instance_uuid,
                               project_id=project_scope(context),
                               delete_bound=delete_bound)
        self.release(context, released)
        self.claims.release(claimed)
        for arq in doomed:
            notifications.emit(self.notifier, context,
                               notifications.ARQ_DELETED,
                               notifications.arq_fields(arq))
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
    def schedule(self, context, uuid, instance_uuid, hostname=None,
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
                   time.monotonic(), carries=attempt)
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
            reason = failure.reason(error)
            LOG.warning('Binding ARQ %s to instance %s on host %s failed '
                        'after %.1f s: %s', uuid, instance_uuid, host,
                        time.monotonic() - accepted, reason)
            released = arqs.fail_bind(uuid, attempt, reason)
            if released is None:
                LOG.info('ARQ %s was unbound or deleted while binding', uuid)
                return
            self.release(context, released)
            metrics.bind_ended(accepted, succeeded=False)
            self._told(context, notifications.ARQ_BIND_FAILED, uuid)
            notify(uuid, instance_uuid, succeeded=False)
            return
        metrics.bind_ended(accepted, succeeded=True)
        self._told(context, notifications.ARQ_BOUND, uuid)
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
            self.release(context, scheduling.give_back(uuid, attempt,
                                                        hostname))
            return str(error)

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

    def _told(self, context, event_type, uuid):
        notifications.emit(self.notifier, context, event_type,
                           lambda: notifications.arq_fields(arqs.get(uuid)))

    def _to_delete(self, context, uuids, instance_uuid):
        """The ARQs a delete names, as they are (read only when versioned
        notifications are sent)."""
        if not getattr(self.notifier, 'versioned', False):
            return []
        filters = {'uuids': uuids} if uuids is not None \
            else {'instance_uuid': instance_uuid}
        return arqs.list_arqs(filters, None,
                              project_id=project_scope(context))

    def release(self, context, released):
        for item in released:
            self.agent_api.release_attach_handle(context, item['hostname'],
                                                 item)

    def fail_interrupted(self):
        """Fail the bindings nobody will finish -- their conductor or host
        is down, or they outlived twice the agent timeout -- freeing what
        they hold; Nova is told of its own."""
        self._failed_by_sweep(
            arqs.fail_interrupted_binds(*interrupted_limits(self.conf)),
            'its conductor or host went down, or it took too long')
        # Claims of standalone bindings that ended without their
        # conductor (it died) or whose removal failed: removed now.
        self.claims.sync_stale()

    def fail_lost(self, attempts):
        """Fail the bindings of these ``attempts`` of this conductor that
        no job carries (conductor/lost_work.py); answers those failed."""
        failed = arqs.fail_lost_binds(attempts)
        self._failed_by_sweep(failed, 'no job of its conductor carried it')
        return [uuid for uuid, _, _ in failed]

    def _failed_by_sweep(self, failed, why):
        """Give back the handles of the bindings a sweep failed
        (``[(arq uuid, instance uuid, released)]``); Nova is told of its
        own."""
        alone = scheduling.standalone([uuid for uuid, _, _ in failed])
        for uuid, instance_uuid, released in failed:
            LOG.warning('Binding of ARQ %s to instance %s was interrupted '
                        '(%s); failed it', uuid, instance_uuid, why)
            self.release(context_lib.get_admin_context(), released)
            if uuid not in alone:
                self.nova.binding_ended(uuid, instance_uuid,
                                        succeeded=False)


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


def _ms(started):
    return (time.monotonic() - started) * 1000
