"""Per-project accelerator limits: local defaults or Keystone's unified
limits (oslo.limit). Usage is counted in the database (db/quotas.py)."""

from oslo_log import log as logging

from cyborg_like.common import exception

LOG = logging.getLogger(__name__)

# Keystone limit names: "class:FPGA", as Nova names resource classes.
PREFIX = 'class:'

# A limit is read on every ARQ creation and bind: a dropped connection or a
# Keystone restarting must cost a retry, not a failed request.
KEYSTONE_RETRIES = {'connect_retries': 3, 'status_code_retries': 3,
                    'retriable_status_codes': [502, 503, 504]}


class Limits:
    def __init__(self, conf):
        self.conf = conf
        self._enforcer = None
        if conf.quota.driver == 'unified_limits':
            from oslo_limit import limit
            from oslo_limit import opts as limit_opts
            limit_opts.register_opts(conf)
            for name, value in KEYSTONE_RETRIES.items():
                conf.set_default(name, value, group='oslo_limit')
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
        from keystoneauth1 import exceptions as ksa_exceptions
        from openstack import exceptions as sdk_exceptions
        try:
            found = self._enforcer.get_project_limits(
                project_id, [PREFIX + rc for rc in resources])
        except (ksa_exceptions.ClientException,
                sdk_exceptions.SDKException) as error:
            # Keystone is down or failing: a 503 the caller may retry,
            # not a server error with a traceback.
            raise exception.LimitsUnavailable(reason=error) from error
        return {name[len(PREFIX):]: limit for name, limit in found}

    def known_resources(self):
        return sorted(self.conf.quota.default_limits)
