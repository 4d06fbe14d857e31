"""Pecan hooks: context, conductor client, microversion, error format."""

from pecan import hooks

from cyborg_like.api import errors
from cyborg_like.api import microversion
from cyborg_like.api import policy
from cyborg_like.common import context


# The project of noauth callers that name none (X-Project-Id).
NOAUTH_PROJECT = 'noauth'


class ContextHook(hooks.PecanHook):
    """Builds the request context from what auth put in the headers."""

    def __init__(self, auth_strategy):
        self.noauth = auth_strategy == 'noauth'

    def before(self, state):
        ctx = context.RequestContext.from_environ(state.request.environ)
        if self.noauth:
            # No authentication: the caller is whoever its X-Project-Id and
            # X-Roles headers say, by default an admin of NOAUTH_PROJECT
            # who also holds Nova's service token (what only Nova may do,
            # such as deleting a Bound request, needs one).
            ctx.project_id = ctx.project_id or NOAUTH_PROJECT
            if not ctx.roles:
                ctx.roles = ['admin', 'member', 'reader']
                ctx.service_roles = ctx.service_roles or ['service']
        # Who the caller is, decided once by policy (rules in
        # cyborg_like/policies/base.py) and carried to the conductor.
        ctx.is_admin = policy.check('context_is_admin', ctx)
        ctx.all_projects = policy.check('all_projects_api', ctx)
        state.request.context = ctx


class ServiceHook(hooks.PecanHook):
    """Hands every handler what the API was built with: the RPC client to
    the conductor, the configuration (``conf``, and ``api_conf`` its
    [api] group) and the catalog's image stores."""

    def __init__(self, conductor_api, conf, stores):
        self.conductor_api = conductor_api
        self.conf = conf
        self.stores = stores

    def on_route(self, state):
        state.request.conductor_api = self.conductor_api
        state.request.conf = self.conf
        state.request.api_conf = self.conf.api
        state.request.stores = self.stores


class MicroversionHook(hooks.PecanHook):
    """Negotiates the microversion of every request below /v2."""

    def on_route(self, state):
        path = state.request.path_info.rstrip('/')
        if path != '/v2' and not path.startswith('/v2/'):
            return
        state.request.version = microversion.requested(state.request.headers)

    def after(self, state):
        version = getattr(state.request, 'version', None)
        if version is not None:
            state.response.headers.update(microversion.range_headers())
            state.response.headers[microversion.HEADER] = '%s %s' % (
                microversion.SERVICE_TYPE, version)


class EmptyBodyHook(hooks.PecanHook):
    """A handler that returns nothing sends no body, as Cyborg does.

    The json renderer would send ``null``: a 204 must have no body (on a
    kept-alive connection it becomes garbage before the next response), and
    openstacksdk fails on a 202 whose body parses to None.
    """

    def after(self, state):
        if not isinstance(state.response.app_iter, list):
            return      # streamed (image data): never read it here
        if state.response.body == b'null':
            state.response.body = b''
            state.response.content_type = None


class ErrorHook(hooks.PecanHook):
    """Turns whatever a request raised into the one JSON error body;
    a 503 says to retry after ``retry_after`` seconds."""

    def __init__(self, retry_after):
        self.retry_after = retry_after

    def on_error(self, state, error):
        return errors.from_exception(error, self.retry_after)


def public_url(request):
    """Base URL for links: configured, or where the request came in.

    Worked out once per request: a list page links every item, and each
    lookup through pecan's request proxy and WebOb costs ~10 us (a third
    of the API's CPU for a page of 1,000; see docs/benchmarks.md).
    """
    environ = request.environ
    url = environ.get('cyborg_like.public_url')
    if url is None:
        url = environ['cyborg_like.public_url'] = (
            request.api_conf.public_endpoint or request.application_url
        ).rstrip('/')
    return url
