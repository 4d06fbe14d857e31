"""The database steps of device leases with the conductor's rules given
to them (docs/leases.md): each function takes the ``[leases]`` values as
plain arguments, computes what is pure (conductor/lease_rules.py: the
windows of a new lease, which devices it gets, whose binding is taken
back how, the limits' arithmetic) and passes it to the queries and
conditional updates of db/lease*.py. ``Leases`` (conductor/leases.py)
runs its workflow and periodic through these, and tests call them
directly with a clock of their own.
"""

from cyborg_like.conductor import lease_rules
from cyborg_like.db import lease_boundaries
from cyborg_like.db import lease_plans
from cyborg_like.db import lease_preemption
from cyborg_like.db import lease_releases
from cyborg_like.db import lease_windows
from cyborg_like.db import leases

LIVE_WINDOWS = lease_windows.LIVE_WINDOWS

# Steps that need no rule: the database's own.
open_due = lease_boundaries.open_due
notice_due = lease_boundaries.notice_due
warn_due = lease_preemption.warn_due
awaiting_nova = lease_releases.awaiting_nova
list_leases = leases.list_leases
get = leases.get


def create(values, project_id, now, horizon_days, max_windows, grace,
           preempt=False, limits=None):
    """A new lease for ``project_id`` from ``values`` (start and end as
    naive local times of ``timezone``): 400 when it has no window before
    the horizon, 409 when its windows cannot be guaranteed, or when a
    device is held by another project's workload and ``preempt`` is
    False; 403 beyond ``limits`` ({'devices': n, 'device_hours': n})."""
    windows, horizon = lease_rules.windows(values, now, horizon_days,
                                           max_windows)
    rules = lease_rules.LeaseRules(grace, max_windows, limits)
    return leases.create(values, project_id, now, windows, horizon, rules,
                         preempt=preempt)


def plan(now, horizon_days, max_windows, grace):
    """The windows of recurring leases written past the horizon; how
    many were added."""
    return lease_plans.plan(now, horizon_days,
                            lease_rules.LeaseRules(grace, max_windows))


def expire(now):
    """Uuids of the active leases with no window left that expired."""
    return leases.expire(now, lease_rules.LeaseRules())


def end(uuid, event, now, project_id=None):
    """``give_back`` or ``revoke`` the lease now (db/leases.py end)."""
    return leases.end(uuid, event, now, lease_rules.LeaseRules(),
                      project_id)


def preempt_due(now, grace):
    """Take back devices from other projects' ARQs told of a window
    begun ``grace`` seconds ago (db/lease_preemption.py)."""
    return lease_preemption.preempt_due(now, lease_rules.LeaseRules(grace))


def close_due(now, grace):
    """Close windows ended ``grace`` seconds ago
    (db/lease_boundaries.py)."""
    return lease_boundaries.close_due(now, lease_rules.LeaseRules(grace))
