"""Policy enforcement at the API edge (oslo.policy, rules in code)."""

import threading
import time

from oslo_policy import opts as policy_opts
from oslo_policy import policy
import webob.exc

from cyborg_like import policies
from cyborg_like.conf import CONF

_ENFORCER = None
_LOCK = threading.Lock()

# Secure RBAC: the new defaults and scope checks are on (defaults only:
# [oslo_policy] in a config file still wins). Registered on import, so
# that [oslo_policy] can be set before the first request.
policy_opts.set_defaults(CONF, enforce_scope=True, enforce_new_defaults=True)


class _Enforcer(policy.Enforcer):
    """oslo.policy's enforcer, looking for a changed policy file at most
    every [api] policy_reload_interval seconds: its own check on every
    request searched the configuration directories for the file and
    stat'ed it and each policy directory (docs/benchmarks.md, "floor")."""

    def __init__(self, conf, interval):
        super().__init__(conf)
        self._interval = interval
        self._looked_at = None

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if (force_reload or self._looked_at is None
                or now - self._looked_at >= self._interval):
            super().load_rules(force_reload)
            self._looked_at = now


def get_enforcer():
    """The enforcer; also the oslopolicy-* tools' entry point."""
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is None:
            _ENFORCER = _Enforcer(CONF, CONF.api.policy_reload_interval)
            _ENFORCER.register_defaults(policies.list_rules())
        return _ENFORCER


def reset():
    global _ENFORCER
    with _LOCK:
        _ENFORCER = None


# The target of cloud-wide inventory (devices, deployables, attributes,
# hosts): it names no project, so no project-scoped check can match it.
CLOUD = {}


def _target(context, target):
    # By default the caller's own project, which is what list operations
    # act on: the conductor scopes their queries to it.
    return {'project_id': context.project_id} if target is None else target


def authorize(rule, context, target=None):
    """403 unless ``context`` may do ``rule`` on ``target``."""
    try:
        get_enforcer().authorize(rule, _target(context, target), context,
                                 do_raise=True)
    except (policy.PolicyNotAuthorized, policy.InvalidScope):
        raise webob.exc.HTTPForbidden(
            detail="Policy doesn't allow %s to be performed." % rule)


def check(rule, context, target=None):
    """Whether ``context`` may do ``rule`` on ``target`` (no raise)."""
    try:
        return bool(get_enforcer().authorize(
            rule, _target(context, target), context))
    except policy.InvalidScope:
        return False
