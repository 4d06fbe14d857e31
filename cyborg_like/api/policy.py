"""Policy enforcement at the API edge (oslo.policy, rules in code)."""

import threading

from oslo_policy import opts as policy_opts
from oslo_policy import policy
import webob.exc

from cyborg_like import policies
from cyborg_like.conf import CONF

# Secure RBAC: the new defaults and scope checks are on.
policy_opts.set_defaults(CONF, enforce_scope=True,
                         enforce_new_defaults=True)

_ENFORCER = None
_LOCK = threading.Lock()


def get_enforcer():
    """The enforcer; also the oslopolicy-* tools' entry point."""
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is None:
            _ENFORCER = policy.Enforcer(CONF)
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
