"""The request context carried from the API through every RPC call."""

from oslo_context import context


class RequestContext(context.RequestContext):
    """User, project, roles and request id of one request.

    Everything here is serialised into each RPC message (``to_dict``) and
    rebuilt on the other side (``from_dict``), so the conductor and agents
    log and authorise with the caller's identity and request id.
    """


def get_admin_context(request_id=None):
    """A context for the services' own work (discovery, heartbeats)."""
    kwargs = {'is_admin': True, 'roles': ['admin'], 'overwrite': False}
    if request_id:
        kwargs['request_id'] = request_id
    return RequestContext(**kwargs)
