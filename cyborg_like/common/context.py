"""The request context carried from the API through every RPC call."""

from oslo_context import context


class RequestContext(context.RequestContext):
    """User, project, roles and request id of one request.

    Everything here is serialised into each RPC message (``to_dict``) and
    rebuilt on the other side (``from_dict``), so the conductor and agents
    log with the caller's identity and request id.

    ``all_projects`` is the API's policy decision (rule
    ``all_projects_api``) that the caller sees every project's accelerator
    requests and operations; the conductor scopes its queries by it and
    never looks at roles. A context without it (from an API older than the
    flag) is scoped to its project.

    ``deadline`` is when the caller stops waiting for an answer, in seconds
    since the epoch (UTC wall clock, as ``time.time()``), or None. The
    conductor RPC client sets it from its timeout; the conductor drops a
    call whose deadline has passed before it started (common/rpc.py), so
    work nobody waits for any more is not done. Wall clock rather than a
    remaining budget because a budget stamped on receipt cannot count the
    time a message spent in the sender's publish retries or in a queue,
    which is exactly the late work to drop; hosts must be NTP-synced, and
    clock skew moves the cut-off by as much.

    ``call_id`` names one RPC call (not its request: a request may make
    several calls), the same in every delivery of its message; the change
    log holds it once, so a call the broker delivers twice writes once.
    """

    FROM_DICT_EXTRA_KEYS = ['deadline', 'call_id']

    def __init__(self, all_projects=False, deadline=None, call_id=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.all_projects = all_projects
        self.deadline = deadline
        self.call_id = call_id

    def to_dict(self):
        values = super().to_dict()
        values['all_projects'] = self.all_projects
        values['deadline'] = self.deadline
        values['call_id'] = self.call_id
        return values

    @classmethod
    def from_dict(cls, values, **kwargs):
        # Only a literal True widens the scope.
        kwargs.setdefault('all_projects', values.get('all_projects') is True)
        return super().from_dict(values, **kwargs)


def get_admin_context(request_id=None):
    """A context for the services' own work (discovery, heartbeats)."""
    kwargs = {'is_admin': True, 'all_projects': True, 'roles': ['admin'],
              'overwrite': False}
    if request_id:
        kwargs['request_id'] = request_id
    return RequestContext(**kwargs)


def project_scope(context):
    """The project an ARQ or operation query is limited to; None for
    callers the API's policy (``all_projects_api``) let see them all."""
    if getattr(context, 'all_projects', False):
        return None
    return context.project_id
