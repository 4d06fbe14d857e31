"""Device leases on the conductor: creating and ending them, and the
periodic that acts at their windows' boundaries (docs/leases.md).

Every run of ``Leases.run`` (each conductor, every ``[leases]
check_interval``) reads the windows whose boundaries passed and moves them
with conditional updates (db/leases.py), so conductors share the work and
one that stops half-way leaves the rest to the next run:

1. other projects' ARQs bound to the devices of windows starting within
   ``notice_seconds`` (or begun) and not told yet get ``lease_starts_at``,
   and the ``accelerator.lease.starting`` notification goes out;
2. windows begun are opened: their hosts are marked for the Placement
   sync (the devices become reserved inventory) and in the availability
   feed's change log;
3. other projects' ARQs told of a window begun ``grace_seconds`` ago and
   still bound to its devices are unbound (preempted) as at an end;
4. windows ending within ``notice_seconds`` are noticed: the lessee's ARQs
   bound to the devices get ``lease_ends_at``, and the
   ``accelerator.lease.ending`` notification goes out;
5. windows ended ``grace_seconds`` ago are closed: the lessee's ARQs still
   bound to the devices are unbound (handles released by their agents,
   Nova told as when a binding is failed), the hosts marked again;
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
from cyborg_like.db import hosts
from cyborg_like.db import leases

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

    def create(self, context, values):
        values = dict(values)
        for key in ('start', 'end'):
            values[key] = _local(values[key], key)
        opts = self._opts
        lease = leases.create(values, context.project_id, self.clock(),
                              opts.horizon_days, opts.max_windows,
                              opts.grace_seconds)
        LOG.info('Lease %s of project %s created: %d device(s), first '
                 'window %s', lease['uuid'], lease['project_id'],
                 lease['count'], lease['window'])
        return lease

    def end(self, context, uuid, event, project_id):
        lease, released, unbound = leases.end(uuid, event, self.clock(),
                                              project_id)
        self._unbound(context, released, unbound)
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
        for warning in leases.warn_due(now, opts.notice_seconds):
            self._warn(context, warning)
        for uuid, project, starts_at, ends_at in leases.open_due(now):
            LOG.info('Lease %s of project %s: window %s to %s opened', uuid,
                     project, starts_at, ends_at)
        released, preempted = leases.preempt_due(now, opts.grace_seconds)
        self._release(context, released)
        for uuid, instance_uuid, scheduled, lease in preempted:
            LOG.info('ARQ %s of instance %s unbound: its device is lent to '
                     'another project (lease %s)', uuid, instance_uuid,
                     lease)
            self._tell_nova(uuid, instance_uuid, scheduled)
        for notice in leases.notice_due(now, opts.notice_seconds):
            self._notice(context, notice)
        released, unbound, closed = leases.close_due(now, opts.grace_seconds)
        self._unbound(context, released, unbound)
        for uuid in closed:
            LOG.info('Lease %s: window closed', uuid)
        leases.plan(now, opts.horizon_days, opts.max_windows,
                    opts.grace_seconds)
        for uuid in leases.expire(now):
            LOG.info('Lease %s expired: no window left', uuid)
            self._notify(context, ENDED, {'lease_uuid': uuid,
                                          'state': states.EXPIRED})

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
            'devices': warning['devices'],
            'arqs': [{'uuid': uuid, 'instance_uuid': instance,
                      'device_uuid': device}
                     for uuid, instance, device in warning['arqs']]})

    def _unbound(self, context, released, unbound):
        self._release(context, released)
        for uuid, instance_uuid, scheduled in unbound:
            LOG.info('ARQ %s of instance %s unbound: its lease ended', uuid,
                     instance_uuid)
            self._tell_nova(uuid, instance_uuid, scheduled)

    def _tell_nova(self, uuid, instance_uuid, scheduled):
        if not scheduled:
            # As when the liveness sweep fails a binding: the only event
            # Nova has for accelerator requests.
            self.nova.binding_ended(uuid, instance_uuid, succeeded=False)

    def _notify(self, context, event, payload):
        if self.notifier is not None:
            self.notifier.info(context, event, payload)


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
