"""oslo.policy's checks, their arguments looked up once per check class.

Each time oslo.policy evaluates a check (``_checks._check``) it asks
``inspect.getfullargspec`` about the check's ``__call__`` to learn whether
it takes the rule's name -- 12 times per request with our default rules
(an admin read checks ~4 checks in each of 3 rules), a third of the CPU
of a request answered 304 (docs/benchmarks.md, "floor"). A check class's
``__call__`` does not change while the process runs, so the answer is
cached here by function; anything that is not a check class's instance
goes the library's way. Importing this module installs it where the
library looks ``_check`` up (its callers use the module's global).
"""

import functools
import inspect

from oslo_policy import _checks

_uncached = _checks._check


@functools.lru_cache(maxsize=256)
def _takes_rule_name(call):
    return len(inspect.getfullargspec(call).args) > 4


def _check(rule, target, creds, enforcer, current_rule):
    call = getattr(type(rule), '__call__', None)
    if not isinstance(rule, _checks.BaseCheck) or \
            not inspect.isfunction(call) or '__call__' in vars(rule):
        return _uncached(rule, target, creds, enforcer, current_rule)
    if _takes_rule_name(call):
        return rule(target, creds, enforcer, current_rule)
    return rule(target, creds, enforcer)


_checks._check = _check
