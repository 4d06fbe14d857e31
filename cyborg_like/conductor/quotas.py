"""Per-project accelerator limits: local ones (``[quota] default_limits``,
which a project's own limits set through the API override) or Keystone's
unified limits (oslo.limit). Usage is counted in the database
(db/quotas.py)."""

from oslo_log import log as logging

from cyborg_like.common import exception
from cyborg_like.db import quotas

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

    @property
    def local(self):
        return self._enforcer is None

    def for_project(self, project_id, resources):
        """{resource class: limit} for ``resources``; absent or -1 =
        unlimited."""
        return self.with_sources(project_id, resources)[0]

    def with_sources(self, project_id, resources):
        """(limits, {resource class: where its limit comes from}):
        ``project`` (its own, set through the API), ``default`` ([quota]
        default_limits) or ``keystone``."""
        if not self.local:
            found = self._from_keystone(project_id, resources)
            return found, dict.fromkeys(found, 'keystone')
        own = {rc: limit for rc, limit in quotas.own_limits(project_id)
               .items() if rc in resources}
        found = dict(self.defaults(resources), **own)
        return found, {rc: 'project' if rc in own else 'default'
                       for rc in found}

    def for_creation(self, project_id, resources):
        """The ``limits`` of db/arqs.create: Keystone's, or the local
        defaults, which the project's own limits override there, read in
        the transaction that counts the usage (``own_limits``)."""
        if self.local:
            return self.defaults(resources)
        return self._from_keystone(project_id, resources)

    def defaults(self, resources):
        return {rc: int(limit) for rc, limit
                in self.conf.quota.default_limits.items()
                if rc in resources}

    def check_local(self, project_id):
        """Limits are set here only with the local driver."""
        if not self.local:
            raise exception.QuotaLimitsInKeystone(project=project_id)

    def _from_keystone(self, project_id, resources):
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

    def known_resources(self, project_id):
        """The classes a project's quota shows beside those it uses."""
        known = set(self.conf.quota.default_limits)
        if self.local:
            known.update(quotas.own_limits(project_id))
        return known
