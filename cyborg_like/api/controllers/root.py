"""/: which API versions this service speaks (openstacksdk starts here),
and the OpenAPI document of the API at /openapi.yaml and /openapi.json.

None of these is below /v2, so none is microversioned. Every other path is
served as if it were below /v2, as Cyborg routes it: clients given the
service root as their endpoint (openstacksdk with an endpoint override,
``openstack --os-endpoint``) ask for /devices, /accelerator_requests...
"""

import pecan
from pecan import rest
import webob
import webob.exc

from cyborg_like.api import microversion
from cyborg_like.api import openapi
from cyborg_like.api.controllers import v2

# The first path segments that are not an alias of /v2/<segment>.
OWN_SEGMENTS = ('', 'v2', 'openapi.yaml', 'openapi.json')


class RootController(rest.RestController):
    v2 = v2.V2Controller()

    @pecan.expose('json')
    def get(self):
        version = dict(v2.version_document(), id='v2')
        return {
            'name': 'OpenStack Cyborg API',
            'description': 'cyborg_like manages the lifecycle of hardware '
                           'accelerators such as GPUs and FPGAs; it serves '
                           'the OpenStack Cyborg v2 API.',
            'versions': [version],
            'default_version': version,
        }

    @pecan.expose()
    def _route(self, args, request=None):
        request = request or pecan.request
        path = request.path_info
        if args and args[0] not in OWN_SEGMENTS:
            args = ['v2'] + list(args)
            path = '/v2' + path
            # MicroversionHook saw no /v2 path: negotiate here instead.
            request.version = microversion.requested(request.headers)
        _refuse_undocumented_method(request.method, path)
        return super()._route(args, request)


def _refuse_undocumented_method(method, path):
    """405 with the document's methods in Allow, so that Allow says per
    path what the document says (pecan's Allow lists every method of the
    controller, e.g. GET for POST-only /v2/devices/{uuid}/disable, and
    refuses some methods with 404). Paths the document does not know are
    left to pecan (404)."""
    allowed = openapi.allowed_methods(path)
    if allowed is not None and method not in allowed:
        raise webob.exc.HTTPMethodNotAllowed(
            headers={'Allow': ', '.join(allowed)})


class OpenAPIYamlController(rest.RestController):
    """GET /openapi.yaml: cyborg_like/api/openapi.yaml as written."""

    @pecan.expose(content_type='application/yaml')
    def get(self):
        return webob.Response(body=openapi.yaml_text(),
                              content_type='application/yaml',
                              charset='utf-8')


class OpenAPIJsonController(rest.RestController):
    """GET /openapi.json: the same document as JSON."""

    @pecan.expose('json')
    def get(self):
        return webob.Response(body=openapi.json_text(),
                              content_type='application/json',
                              charset='utf-8')


# Path segments with a dot cannot be attribute names.
pecan.route(RootController, 'openapi.yaml', OpenAPIYamlController())
pecan.route(RootController, 'openapi.json', OpenAPIJsonController())
