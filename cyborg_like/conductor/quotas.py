"""Per-project accelerator limits: local defaults or Keystone's unified
limits (oslo.limit). Usage is counted in the database (db/quotas.py)."""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Keystone limit names: "class:FPGA", as Nova names resource classes.
PREFIX = 'class:'


class Limits:
    def __init__(self, conf):
        self.conf = conf
        self._enforcer = None
        if conf.quota.driver == 'unified_limits':
            from oslo_limit import limit
            # Usage is ours to count, race-free, in the database; oslo.limit
            # only tells the limits. Not cached: its cache lives as long as
            # the enforcer (the conductor), so limits an operator changes
            # in Keystone would never apply (Nova asks Keystone every time,
            # too).
            self._enforcer = limit.Enforcer(lambda project, names: {},
                                            cache=False)

    def for_project(self, project_id, resources):
        """{resource class: limit} for ``resources``; absent = unlimited."""
        if self._enforcer is None:
            return {rc: int(limit) for rc, limit
                    in self.conf.quota.default_limits.items()
                    if rc in resources}
        found = self._enforcer.get_project_limits(
            project_id, [PREFIX + rc for rc in resources])
        return {name[len(PREFIX):]: limit for name, limit in found}

    def known_resources(self):
        return sorted(self.conf.quota.default_limits)
