"""/: which API versions this service speaks (openstacksdk starts here),
and the OpenAPI document of the API at /openapi.yaml and /openapi.json.

None of these is below /v2, so none is microversioned.
"""

import pecan
from pecan import rest
import webob

from cyborg_like.api import openapi
from cyborg_like.api.controllers import v2


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
