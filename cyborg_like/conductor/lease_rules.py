"""The rules of device leases, with no SQL (docs/leases.md): which
windows a lease has, when two windows clash, which devices a new lease
gets, whose binding is taken back how, when a lease has expired, and the
arithmetic of the per-project limits.

The db/lease_*.py modules run the queries and conditional updates; the
decisions they need inside their transactions come from here, through a
``LeaseRules`` object the conductor passes in (db/ imports nothing of the
conductor: docs/design.md).
"""

import datetime

from cyborg_like.common import exception
from cyborg_like.common import recurrence
from cyborg_like.db import api as db_api

HOUR = 3600.0


def seconds(value):
    """``value`` (seconds, or already a timedelta) as a timedelta."""
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(seconds=value)


def windows(values, now, horizon_days, max_windows):
    """(the new lease's windows in naive UTC up to the horizon, the
    horizon) from the API's ``values``; 400 when it has none."""
    start, end = values['start'], values['end']
    rule, zone = values.get('recurrence'), values['timezone']
    recurrence.check(start, end, zone, rule)
    horizon = now + datetime.timedelta(days=horizon_days)
    found = recurrence.windows(start, end, zone, rule, now, horizon,
                               limit=max_windows)
    if not found:
        raise exception.Invalid(
            'The lease has no window between now and the lease horizon '
            '(%d days ahead, [leases] horizon_days).' % horizon_days)
    return found, horizon


def clash(taken, windows, grace):
    """The first of ``taken`` [(lease uuid, start, end)] within ``grace``
    of one of ``windows`` (both sorted by start), or None: a merge, not a
    product."""
    i = 0
    for uuid, starts_at, ends_at in taken:
        while i < len(windows) and windows[i][1] + grace <= starts_at:
            i += 1
        if i == len(windows):
            return None
        if windows[i][0] < ends_at + grace:
            return uuid, starts_at, ends_at + grace
    return None


def by_binder(held):
    """(ARQs bound by standalone scheduling or to no instance, ARQs Nova
    bound to an instance): a device the latter hold is given back by
    Nova, never taken from the guest behind its back."""
    nova_bound = [arq for arq in held
                  if not arq.scheduled and arq.instance_uuid]
    return [arq for arq in held if arq not in nova_bound], nova_bound


def expired(lease):
    """Whether an active lease with no window left to come has ended:
    its recurrence has no start past what was written."""
    last = recurrence.last_start(lease.start_local, lease.timezone,
                                 lease.recurrence)
    return last is not None and last < lease.planned_until


def enforced(limits):
    """The limits that bound something (a negative one does not)."""
    return {what: limit for what, limit in (limits or {}).items()
            if limit is not None and limit >= 0}


def hours(windows, now, horizon):
    """Hours of ``windows`` [(start, end)] between ``now`` and
    ``horizon``."""
    return sum(max((min(e, horizon) - max(s, now)).total_seconds(), 0)
               for s, e in windows) / HOUR


class LeaseRules:
    """The decisions db/leases.py and its neighbours ask for inside their
    transactions, with the ``[leases]`` values they depend on."""

    def __init__(self, grace=0, max_windows=None, limits=None):
        self.grace = seconds(grace)
        self.max_windows = max_windows
        self.limits = enforced(limits)

    by_binder = staticmethod(by_binder)
    expired = staticmethod(expired)

    def clash(self, taken, windows):
        return clash(taken, windows, self.grace)

    def choose(self, candidates, taken, holders, windows, values):
        """The devices a new lease gets: every named one, or the first
        ``count`` free for all its windows: held by no other lease then
        (``taken``, {device id: [(lease uuid, start, end)]}), nor by
        another project's workload of ``holders`` ({device id: ARQ row}).
        Otherwise the 409 (LeaseConflict, LeaseDeviceHeld, or
        LeaseNoDevices when too few devices match)."""
        conflicts = {}
        for device in candidates:
            found = self.clash(taken.get(device.id, []), windows)
            if found is not None or device.id in holders:
                conflicts[device.id] = (device, found,
                                        holders.get(device.id))
        free = [d for d in candidates if d.id not in conflicts]
        wanted = len(candidates) if values.get('devices') else \
            values['count']
        if len(free) >= wanted:
            return free[:wanted]
        if conflicts:
            raise _conflict(next(iter(conflicts.values())), len(free),
                            wanted, windows[0][0])
        raise exception.LeaseNoDevices(
            found=len(candidates), count=wanted,
            what='resource class %s%s' % (
                values['resource_class'], ''.join(
                    ', %s %s' % (k, v) for k, v in sorted(
                        values.get('traits', {}).items()))))

    def planned(self, lease, horizon):
        """The windows of recurring ``lease`` from its ``planned_until``
        to ``horizon``."""
        try:
            found = recurrence.windows(
                lease.start_local, lease.end_local, lease.timezone,
                lease.recurrence, lease.planned_until, horizon,
                limit=self.max_windows)
        except exception.Invalid:
            return []
        return [w for w in found if w[0] >= lease.planned_until]

    def unclashed(self, windows, busy):
        """``windows`` less those clashing with ``busy`` (other leases'
        windows of the devices, sorted by start: older leases are
        written first and win)."""
        return [w for w in windows if self.clash(busy, [w]) is None]

    def check_limits(self, held, devices, windows, now, horizon):
        """Refuse (403) a new lease of ``devices`` devices for
        ``windows`` that would take the project past a limit; ``held``:
        (devices, [(devices, start, end)] of its leases' windows, None
        when it has no lease), what the project's active leases hold
        (db/lease_limits.py usage)."""
        held_devices, held_windows = held
        used = {'devices': held_devices,
                'device_hours': 0.0 if held_windows is None else sum(
                    n * hours([(s, e)], now, horizon)
                    for n, s, e in held_windows)}
        asked = {'devices': devices,
                 'device_hours': devices * hours(windows, now, horizon)}
        for what, limit in sorted(self.limits.items()):
            if used[what] + asked[what] > limit:
                raise exception.LeaseLimitExceeded(
                    what=what, limit=limit, in_use=_shown(used[what]),
                    requested=_shown(asked[what]))


def _conflict(conflict, free, wanted, first):
    """The lessor's 409, naming what holds a device; it also carries the
    counts a project is answered instead (LeaseNotFree)."""
    device, found, holder = conflict
    counts = {'free': free, 'wanted': wanted, 'first': db_api.isotime(first)}
    if found is None:
        return exception.LeaseDeviceHeld(
            arq=holder.uuid, project=holder.project_id,
            instance=holder.instance_uuid, device=device.uuid, **counts)
    uuid, starts_at, ends_at = found
    return exception.LeaseConflict(
        lease=uuid, device=device.uuid, starts_at=db_api.isotime(starts_at),
        ends_at=db_api.isotime(ends_at), **counts)


def _shown(value):
    return round(value, 1) if isinstance(value, float) else value
