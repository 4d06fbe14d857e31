"""Device leases on the conductor: creating and ending them, and the
periodic that acts at their windows' boundaries (docs/leases.md).

Every run of ``Leases.run`` (each conductor, every ``[leases]
check_interval``) reads the windows whose boundaries passed and moves them
with conditional updates (db/lease_*.py, given the rules of
conductor/lease_rules.py by conductor/lease_steps.py), so conductors
share the work and one that stops half-way leaves the rest to the next
run:

1. other projects' ARQs bound to the devices of windows starting within
   ``notice_seconds`` (or begun) and not told yet get ``lease_starts_at``,
   and the ``accelerator.lease.starting`` notification goes out;
2. windows begun are opened: their hosts are marked for the Placement
   sync (the devices become reserved inventory) and in the availability
   feed's change log;
3. other projects' ARQs told of a window begun ``grace_seconds`` ago and
   still bound to its devices are preempted: unbound as at an end when
   standalone scheduling bound them; when Nova did, Nova is asked to
   release them as ``[leases] preemption_action`` says (shelve, then
   offload), never unbound behind its back (a running guest keeps a
   device Nova has not released);
4. windows ending within ``notice_seconds`` are noticed: the lessee's ARQs
   bound to the devices get ``lease_ends_at``, and the
   ``accelerator.lease.ending`` notification goes out;
5. windows ended ``grace_seconds`` ago are closed: the lessee's ARQs still
   bound to the devices are unbound (handles released by their agents;
   those Nova bound are asked of Nova, as in 3), the hosts marked again;
6. the horizon moves on (recurring leases get their next windows) and
   leases with no window left expire.

The clock is the one given (``clock()``: naive UTC), so that tests run
hours of windows in a second.
"""

import datetime

from oslo_log import log as logging
from oslo_utils import timeutils

from cyborg_like.common import context as context_lib
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.conductor import lease_steps
from cyborg_like.conductor import metrics
from cyborg_like.conductor import notifications
from cyborg_like.db import hosts

LOG = logging.getLogger(__name__)

STARTING = 'accelerator.lease.starting'
ENDING = 'accelerator.lease.ending'
ENDED = 'accelerator.lease.ended'


def future_time(text, horizon_days):
    """``text`` (ISO 8601; naive is UTC) as naive UTC, refused unless
    between now and the lease horizon."""
    try:
        when = timeutils.normalize_time(timeutils.parse_isotime(text))
    except ValueError:
        raise exception.Invalid('Invalid time %r (ISO 8601 expected).'
                                % text)
    now = hosts.utcnow()
    if horizon_days is not None and not (
            now - datetime.timedelta(minutes=1) <= when
            <= now + datetime.timedelta(days=horizon_days)):
        raise exception.Invalid(
            'The time asked (%s) must be between now and %d days ahead '
            '([leases] horizon_days).' % (text, horizon_days))
    return when


class Leases:
    def __init__(self, conf, release, nova, notifier=None, clock=None):
        """``release(context, jobs)``: hands released handles to their
        agents (the manager's); ``nova``: the Nova notifier."""
        self.conf = conf
        self._release = release
        self.nova = nova
        self.notifier = notifier
        self.clock = clock or hosts.utcnow

    @property
    def _opts(self):
        return self.conf.leases

    def create(self, context, values, preempt=False):
        """``preempt``: the API's policy let the caller take devices other
        projects' workloads hold (cyborg:lease:preempt)."""
        values = dict(values)
        for key in ('start', 'end'):
            values[key] = _local(values[key], key)
        opts = self._opts
        limits = {'devices': opts.project_max_devices,
                  'device_hours': opts.project_max_device_hours}
        try:
            lease = lease_steps.create(
                values, context.project_id, self.clock(), opts.horizon_days,
                opts.max_windows, opts.grace_seconds, preempt=preempt,
                limits=limits)
        except exception.LeaseConflict as error:
            raise _as_seen_by(context, error) from None
        LOG.info('Lease %s of project %s created: %d device(s), first '
                 'window %s', lease['uuid'], lease['project_id'],
                 lease['count'], lease['window'])
        return lease

    def end(self, context, uuid, event, project_id):
        lease, released, unbound, asked = lease_steps.end(
            uuid, event, self.clock(), project_id)
        self._unbound(context, released, unbound)
        # Nova is asked by the next periodic run, not in this API call.
        self._asked(asked, 'lease %s ended' % uuid)
        LOG.info('Lease %s %s (%d request(s) unbound)', uuid,
                 lease['state'], len(unbound))
        self._notify(context, ENDED, {'lease_uuid': uuid,
                                      'state': lease['state'],
                                      'project_id': lease['project_id']})
        return lease

    def run(self, context=None):
        """Periodic: act on every boundary passed (idempotent)."""
        context = context or context_lib.get_admin_context()
        now, opts = self.clock(), self._opts
        for warning in lease_steps.warn_due(now, opts.notice_seconds):
            self._warn(context, warning)
        for window in lease_steps.open_due(now):
            LOG.info('Lease %s of project %s: window %s to %s opened',
                     *window)
            self._window(context, notifications.WINDOW_OPEN, window)
        released, preempted, asked = lease_steps.preempt_due(
            now, opts.grace_seconds)
        self._release(context, released)
        for uuid, instance_uuid, _, lease in preempted:
            LOG.info('ARQ %s of instance %s unbound: its device is lent to '
                     'another project (lease %s)', uuid, instance_uuid,
                     lease)
        for uuid, instance_uuid, lease in asked:
            self._asked([(uuid, instance_uuid)],
                        'lent to another project (lease %s)' % lease)
        for notice in lease_steps.notice_due(now, opts.notice_seconds):
            self._notice(context, notice)
        released, unbound, asked, closed = lease_steps.close_due(
            now, opts.grace_seconds)
        self._unbound(context, released, unbound)
        self._asked(asked, 'its lease window ended')
        self._ask_nova()
        for window in closed:
            LOG.info('Lease %s of project %s: window %s to %s closed',
                     *window)
            self._window(context, notifications.WINDOW_CLOSE, window)
        lease_steps.plan(now, opts.horizon_days, opts.max_windows,
                    opts.grace_seconds)
        for uuid in lease_steps.expire(now):
            LOG.info('Lease %s expired: no window left', uuid)
            self._notify(context, ENDED, {'lease_uuid': uuid,
                                          'state': states.EXPIRED})
        metrics.lease_run()

    def _notice(self, context, notice):
        ends_at = notice['ends_at'].isoformat() + '+00:00'
        LOG.info('Lease %s of project %s ends at %s: %d request(s) will be '
                 'unbound %d s later', notice['lease'], notice['project_id'],
                 ends_at, len(notice['arqs']), self._opts.grace_seconds)
        self._notify(context, ENDING, {
            'lease_uuid': notice['lease'],
            'project_id': notice['project_id'], 'ends_at': ends_at,
            'grace_seconds': self._opts.grace_seconds,
            'devices': notice['devices'],
            'arqs': [{'uuid': uuid, 'instance_uuid': instance}
                     for uuid, instance in notice['arqs']]})

    def _warn(self, context, warning):
        starts_at = warning['starts_at'].isoformat() + '+00:00'
        LOG.info('Lease %s of another project starts at %s: %d request(s) '
                 'of project %s will be unbound %d s later', warning['lease'],
                 starts_at, len(warning['arqs']), warning['project_id'],
                 self._opts.grace_seconds)
        self._notify(context, STARTING, {
            'lease_uuid': warning['lease'],
            'project_id': warning['project_id'], 'starts_at': starts_at,
            'ends_at': warning['ends_at'].isoformat() + '+00:00',
            'grace_seconds': self._opts.grace_seconds,
            'preemption_action': self._opts.preemption_action,
            'devices': warning['devices'],
            'arqs': [{'uuid': uuid, 'instance_uuid': instance,
                      'device_uuid': device}
                     for uuid, instance, device in warning['arqs']]})

    def _unbound(self, context, released, unbound):
        self._release(context, released)
        # Bound by standalone scheduling: Nova has nothing to hear (those
        # Nova bound were asked of Nova instead: _asked).
        for uuid, instance_uuid, _ in unbound:
            LOG.info('ARQ %s of instance %s unbound: its lease ended', uuid,
                     instance_uuid)

    def _asked(self, asked, why):
        """Nova-bound ARQs whose device a lease needs back (marked once,
        db/lease_releases.py): said once, as the action chosen makes it."""
        action = self._opts.preemption_action
        for uuid, instance_uuid in asked:
            if action == 'notify' or not self.nova.configured:
                LOG.warning(
                    'ARQ %s of instance %s keeps its device until Nova '
                    'releases it (%s; [leases] preemption_action = %s%s)',
                    uuid, instance_uuid, why, action,
                    '' if self.nova.configured else
                    ', [nova] has no auth_type')
            else:
                LOG.info('ARQ %s of instance %s: Nova is asked to shelve '
                         'and offload the instance (%s)', uuid,
                         instance_uuid, why)

    def _ask_nova(self):
        """Each run: the next shelve step of every instance still holding
        a device a lease needs back, as its status says (idempotent: a
        conductor that died half-way leaves nothing undone)."""
        if self._opts.preemption_action != 'shelve_offload':
            return
        for instance_uuid in dict.fromkeys(
                instance for _, instance in lease_steps.awaiting_nova()):
            step = self.nova.release_step(instance_uuid)
            if step is not None:
                LOG.info('Asked Nova to %s instance %s: a lease needs its '
                         'device back', step, instance_uuid)

    def _window(self, context, event_type, window):
        uuid, project, starts_at, ends_at = window
        notifications.emit(self.notifier, context, event_type, {
            'lease_uuid': uuid, 'project_id': project,
            'starts_at': starts_at.isoformat() + '+00:00',
            'ends_at': ends_at.isoformat() + '+00:00'})

    def _notify(self, context, event, payload):
        if self.notifier is not None:
            self.notifier.info(context, event, payload)


def _as_seen_by(context, error):
    """A conflict as the caller may see it: the lessor (all_projects) the
    lease or workload holding a device, a project only how many devices
    were free (an error never names another project's objects)."""
    if context_lib.project_scope(context) is None:
        return error
    return exception.LeaseNotFree(**{key: error.kwargs[key] for key in
                                     ('free', 'wanted', 'first')})


def _local(text, what):
    try:
        value = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise exception.Invalid('Invalid %s %r: a local date and time, '
                                'ISO 8601, is expected.' % (what, text))
    if not 1970 <= value.year <= 9000:
        raise exception.Invalid('The %s %r is not a time a lease may have.'
                                % (what, text))
    if value.tzinfo is not None:
        raise exception.Invalid('The %s is a local time of the lease\'s '
                                'time zone: give no UTC offset.' % what)
    return value
