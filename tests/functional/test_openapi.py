"""cyborg_like/api/openapi.yaml stays true to the API it describes.

* The routes of the pecan controller tree, listed by walking it, are exactly
  the (path, method) pairs of the document: a route added without being
  documented (or documented without existing) fails here.
* The document is a valid OpenAPI 3.1 document.
* Request bodies and query parameters are the very schemas the API
  validates with (cyborg_like/api/schemas/*.py, listing.py).
* Real answers of the in-process service (tests/functional/cloud.py), at the
  minimum and the latest microversion, match the documented status codes,
  headers and response schemas, errors included.
* /openapi.yaml and /openapi.json serve the file.
"""

import copy
import datetime
import inspect
import json
import re
import uuid as uuidlib

import jsonschema
import jsonschema_rs
import openapi_spec_validator
import pecan.util
from pecan import rest
import pytest
import webob
import yaml

from cyborg_like.api import hooks
from cyborg_like.api import microversion
from cyborg_like.api import openapi
from cyborg_like.api import validation
from cyborg_like.api.controllers import root
from cyborg_like.api.controllers.v2 import devices as devices_controller
from cyborg_like.api.controllers.v2 import changes as changes_controller
from cyborg_like.api.controllers.v2 import operations as operations_controller
from cyborg_like.api.schemas import hosts as host_schema
from cyborg_like.api.schemas import accelerator_requests as arq_schema
from cyborg_like.api.schemas import attributes as attribute_schema
from cyborg_like.api.schemas import availability as availability_schema
from cyborg_like.api.schemas import bitstreams as bitstream_schema
from cyborg_like.api.schemas import devices as device_schema
from cyborg_like.api.schemas import deployables as deployable_schema
from cyborg_like.api.schemas import driver_operations as driver_op_schema
from cyborg_like.api.schemas import leases as lease_schema
from cyborg_like.api.schemas import rollouts as rollout_schema
from cyborg_like.api.schemas import device_profiles as profile_schema
from cyborg_like.api.schemas import quotas as quota_schema
from cyborg_like.api.schemas import usage as usage_schema
from cyborg_like.common import listing as fields
from tests.functional import cloud as cloud_module

HTTP_METHODS = ('get', 'put', 'post', 'delete', 'options', 'head', 'patch',
                'trace')
UNKNOWN = '9d6a5d5b-2a4a-4c2e-8a3a-3b1f1f1f1f1f'


def _document():
    with open(openapi.PATH) as f:
        return yaml.safe_load(f)


DOC = _document()


# -- the routes pecan serves --------------------------------------------------

class Route:
    def __init__(self, method, path, handler, path_args, query_args):
        self.method, self.path, self.handler = method, path, handler
        # Names of the handler's arguments taken from the path; the names
        # it takes from the query (None: any, it has **kwargs).
        self.path_args, self.query_args = path_args, query_args

    @property
    def key(self):
        return (_normalize(self.path), self.method)

    def __repr__(self):
        return '%s %s' % (self.method.upper(), self.path)


def _normalize(path):
    """/v2/x/{uuid} and /v2/x/{name} are one route."""
    return re.sub(r'\{[^}]*\}', '{}', path)


def _signature(handler):
    """(positional names, required count, takes **kwargs) after self."""
    spec = inspect.getfullargspec(handler)
    names = spec.args[1:]
    required = len(names) - len(spec.defaults or ())
    assert not spec.varargs, '%s takes *args: its routes are open-ended' % (
        handler.__qualname__)
    return names, required, spec.varkw is not None


def _route(method, path, handler, n_path_args, inherited=0):
    """``inherited``: leading arguments a parent's path already holds."""
    names, _, kwargs = _signature(handler)
    path_args = names[:n_path_args]
    query = None if kwargs else set(names[n_path_args:])
    for name in path_args[inherited:]:
        path += '/{%s}' % name
    return Route(method, path, handler, path_args, query)


def _rest_routes(controller, prefix, inherited=0):
    """Every route of a RestController, the way pecan.rest dispatches.

    A RestController held by one with ``get_one`` is nested under its
    items (pecan's _find_sub_controllers): /parent/{id}/child, the id
    given to the child's handlers first (``inherited`` of them)."""
    routes, understood = [], set()
    cls = type(controller)
    for attr in ('_lookup', '_default'):
        assert not pecan.util.iscontroller(getattr(controller, attr, None)), \
            '%s.%s routes dynamically: list its routes here' % (
                cls.__name__, attr)

    def exposed(name):
        handler = getattr(controller, name, None)
        if handler is not None and pecan.util.iscontroller(handler):
            understood.add(name)
            return handler
        return None

    for name, method in (('get_all', 'get'), ('get_one', 'get'),
                         ('get', 'get'), ('post', 'post'), ('put', 'put'),
                         ('patch', 'patch'), ('delete', 'delete')):
        handler = exposed(name)
        if handler is None:
            continue
        names, required, _ = _signature(handler)
        if name == 'get' and (exposed('get_all') or exposed('get_one')):
            pytest.fail('%s has get and get_all/get_one: the route lister '
                        'does not know which serves what' % cls.__name__)
        required -= inherited
        if name == 'get_all':
            assert required == 0, handler
            shapes = [0]
        elif name == 'get_one':
            shapes = [1]
        else:
            # The first argument is the item's id, from the path; with a
            # default the collection takes the method as well.
            shapes = [min(required, 1)]
            if names[inherited:] and required == 0:
                shapes.append(1)
        routes += [_route(method, prefix, handler, n + inherited, inherited)
                   for n in shapes]

    for action, methods in controller._custom_actions.items():
        for method in methods:
            method = method.lower()
            handler = exposed('%s_%s' % (method, action)) or exposed(action)
            assert handler is not None, '%s.%s is not exposed' % (
                cls.__name__, action)
            if method not in ('get', 'post', 'put', 'delete'):
                # pecan.rest dispatches custom actions of these four only.
                assert '_handle_%s' % method in vars(cls), (
                    '%s declares %s %s but does not route it (needs '
                    '_handle_%s)' % (cls.__name__, method, action, method))
            names, required, _ = _signature(handler)
            route = _route(method, prefix, handler, min(required, 1))
            route.path = (prefix + ('/{%s}' % names[0] if required else '')
                          + '/' + action)
            routes.append(route)

    for name in dir(cls):
        if name.startswith('__'):
            continue
        value = getattr(controller, name)
        if isinstance(value, rest.RestController):
            item = exposed('get_one')
            if item is not None:
                [parent_id] = _signature(item)[0][inherited:]
                routes += _rest_routes(
                    value, '%s/{%s}/%s' % (prefix.rstrip('/'), parent_id,
                                           name), inherited + 1)
            else:
                routes += _rest_routes(value,
                                       prefix.rstrip('/') + '/' + name)
        elif pecan.util.iscontroller(value) and name not in understood \
                and name not in ('_route',):
            pytest.fail('%s.%s is exposed but the route lister does not '
                        'know how pecan routes it' % (cls.__name__, name))
        elif not name.startswith('_') and not inspect.ismethod(value) and \
                hasattr(value, '__dict__') and any(
                    pecan.util.iscontroller(getattr(value, n, None))
                    for n in dir(value)):
            pytest.fail('%s.%s is a controller the route lister does not '
                        'know' % (cls.__name__, name))
    return routes


def served_routes():
    routes = _rest_routes(root.RootController(), '/')
    for route in routes:
        if route.path != '/':
            route.path = route.path.replace('//', '/').rstrip('/')
    return routes


def documented_routes(doc=DOC):
    return {(_normalize(path), method)
            for path, item in doc['paths'].items()
            for method in item if method in HTTP_METHODS}


def test_every_route_is_documented_and_nothing_else():
    served = {}
    for route in served_routes():
        assert route.key not in served, 'two handlers for %s' % route
        served[route.key] = route
    documented = documented_routes()
    undocumented = sorted(set(served) - documented)
    assert not undocumented, (
        'routes missing from cyborg_like/api/openapi.yaml: %s'
        % [served[k] for k in undocumented])
    gone = sorted(documented - set(served))
    assert not gone, 'documented routes that do not exist: %s' % gone


def test_the_route_lister_sees_the_whole_tree():
    keys = {r.key for r in served_routes()}
    for key in [('/', 'get'), ('/v2', 'get'), ('/openapi.json', 'get'),
                ('/v2/devices/{}/health', 'get'),
                ('/v2/deployables/{}/program', 'patch'),
                ('/v2/accelerator_requests', 'patch'),
                ('/v2/accelerator_requests/{}', 'patch'),
                ('/v2/device_profiles', 'delete'),
                ('/v2/device_profiles/{}', 'delete')]:
        assert key in keys
    assert ('/v2/devices', 'post') not in keys
    assert ('/v2/hosts/{}/driver_operations', 'post') in keys
    assert ('/v2/operations/{}/cancel', 'post') in keys


def test_a_new_route_fails_the_check(monkeypatch):
    monkeypatch.setattr(devices_controller.DevicesController,
                        '_custom_actions',
                        dict(devices_controller.DevicesController
                             ._custom_actions, reset=['POST']))
    monkeypatch.setattr(devices_controller.DevicesController, 'reset',
                        devices_controller.DevicesController.enable,
                        raising=False)
    assert ('/v2/devices/{}/reset', 'post') in {
        r.key for r in served_routes()} - documented_routes()


# -- the document itself ------------------------------------------------------

def test_the_document_is_valid_openapi():
    openapi_spec_validator.validate(copy.deepcopy(DOC))


def _patterns(node):
    """Every regular expression of a schema tree: pattern values and
    patternProperties keys."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'pattern' and isinstance(value, str):
                yield value
            if key == 'patternProperties':
                yield from value
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_every_pattern_of_the_document_is_ecma_262():
    """What JSON schema means by a regex, as schemathesis and other
    clients read it: \\Z (Python only) made schemathesis refuse the
    document."""
    ecma = jsonschema_rs.validator_for({'format': 'regex'},
                                       validate_formats=True)
    patterns = set(_patterns(DOC))
    assert len(patterns) > 10
    for pattern in patterns:
        assert ecma.is_valid(pattern), pattern
        assert pattern.startswith('^') and pattern.endswith('$'), pattern
    assert not ecma.is_valid(r'^name\Z')


SERVER_SCHEMAS = [profile_schema.CREATE, attribute_schema.CREATE,
                  attribute_schema.FILTER_SCHEMAS, deployable_schema.PROGRAM,
                  driver_op_schema.CREATE,
                  arq_schema.CREATE, arq_schema.PATCH_MANY,
                  arq_schema.SCHEDULE,
                  arq_schema.PATCH_ONE, validation.list_query_schema(
                      ('name',), ('uuid',)),
                  devices_controller._HEALTH_QUERY]


def test_every_pattern_the_api_validates_with_ends_in_backslash_z():
    """Python's "$" would take a value with a trailing newline; the
    document's "$" (ECMA-262) would not: \\Z keeps the two in agreement."""
    for schema in SERVER_SCHEMAS:
        for pattern in _patterns(schema):
            assert pattern.startswith('^') and pattern.endswith('\\Z'), \
                pattern
            assert _ecma_pattern(pattern).endswith('$')


def test_the_document_says_nul_is_refused_in_free_text():
    text = _deref({'$ref': '#/components/schemas/Text'})
    validator = jsonschema.Draft202012Validator(text)
    assert validator.is_valid('a line\nand another')
    assert not validator.is_valid('a\x00b')
    server = jsonschema.Draft202012Validator(validation.text())
    assert server.is_valid('a line\nand another')
    assert not server.is_valid('a\x00b')


def test_operation_ids_are_unique():
    ids = [op['operationId'] for item in DOC['paths'].values()
           for method, op in item.items() if method in HTTP_METHODS]
    assert len(ids) == len(set(ids))


ANNOTATIONS = ('description', 'example', 'examples', 'title')
MAPS = ('properties', 'patternProperties', 'components', 'schemas')


def _resolve(node, doc=DOC, is_map=False):
    """Inline every local $ref (and drop annotations) for comparison."""
    if isinstance(node, dict):
        if '$ref' in node and not is_map:
            return _resolve(_deref(node), doc)
        return {k: _resolve(v, doc, is_map=k in MAPS and not is_map)
                for k, v in node.items()
                if is_map or k not in ANNOTATIONS}
    if isinstance(node, list):
        return [_resolve(v, doc) for v in node]
    return node


# The one difference allowed between the API's schemas and the document:
# the API's patterns end in \\Z (Python's "$" also matches before a final
# newline, see cyborg_like/api/validation.py), the document's in "$", which
# ECMA-262 engines (schemathesis, other clients) read as the end of the
# string; \\Z is not ECMA-262. Both mean the same there.
_PYTHON_END = re.compile(r'\\Z\Z')


def _ecma_pattern(pattern):
    return _PYTHON_END.sub('$', pattern)


def _portable(node):
    """A Python schema with its patterns as the document spells them."""
    if isinstance(node, dict):
        return {(_ecma_pattern(k) if isinstance(k, str) else k):
                (_ecma_pattern(v) if k == 'pattern' else _portable(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_portable(v) for v in node]
    return node


def _plain(schema):
    """A Python schema as the document carries it: JSON (tuples become
    lists), patterns ending in "$" rather than \\Z."""
    return _portable(json.loads(json.dumps(schema)))


def _operation(path, method):
    return DOC['paths'][path][method]


REQUEST_BODIES = {
    ('/v2/device_profiles', 'post'): profile_schema.CREATE,
    ('/v2/attributes', 'post'): attribute_schema.CREATE,
    ('/v2/deployables/{uuid}/program', 'patch'): deployable_schema.PROGRAM,
    ('/v2/hosts/{hostname}/driver_operations', 'post'):
        driver_op_schema.CREATE,
    ('/v2/accelerator_requests', 'post'): arq_schema.CREATE,
    ('/v2/accelerator_requests', 'patch'): arq_schema.PATCH_MANY,
    # A list of ops; an object is taken as the bulk form (openstacksdk).
    ('/v2/accelerator_requests/{uuid}', 'patch'): {
        'oneOf': [arq_schema.PATCH_ONE, arq_schema.PATCH_MANY]},
    ('/v2/bitstreams', 'post'): bitstream_schema.CREATE,
    ('/v2/accelerator_requests/{uuid}/schedule', 'post'):
        arq_schema.SCHEDULE,
    ('/v2/devices/{uuid}/firmware', 'post'): device_schema.FIRMWARE,
    ('/v2/devices/{uuid}/mig_layout', 'post'): device_schema.MIG_LAYOUT,
    ('/v2/leases', 'post'): lease_schema.CREATE,
    ('/v2/rollouts', 'post'): rollout_schema.CREATE,
    ('/v2/hosts/{hostname}', 'patch'): host_schema.PATCH,
    ('/v2/quotas/{project_id}', 'put'): quota_schema.UPDATE,
}
# Bodies that are not JSON: image data, streamed.
RAW_BODIES = {('/v2/bitstreams/{uuid}/data', 'put')}


def test_request_bodies_are_the_schemas_the_api_validates_with():
    with_body = {(path, method) for path, item in DOC['paths'].items()
                 for method, op in item.items()
                 if method in HTTP_METHODS and 'requestBody' in op}
    assert with_body == set(REQUEST_BODIES) | RAW_BODIES
    for path, method in RAW_BODIES:
        content = _operation(path, method)['requestBody']['content']
        assert list(content) == ['application/octet-stream']
    for (path, method), schema in REQUEST_BODIES.items():
        body = _operation(path, method)['requestBody']
        documented = body['content']['application/json']['schema']
        assert _resolve(documented) == _plain(schema), (path, method)
        assert body['required'] is True


LIST_QUERIES = {
    '/v2/devices': (fields.DEVICE_FILTERS, fields.DEVICE_SORT_KEYS, {}),
    '/v2/deployables': (fields.DEPLOYABLE_FILTERS,
                        fields.DEPLOYABLE_SORT_KEYS, {}),
    '/v2/attributes': (attribute_schema.LIST_FILTERS,
                       attribute_schema.SORT_KEYS,
                       attribute_schema.FILTER_SCHEMAS),
    '/v2/device_profiles': (profile_schema.LIST_FILTERS,
                            profile_schema.SORT_KEYS, {}),
    '/v2/operations': (operations_controller.FILTERS,
                       operations_controller.SORT_KEYS, {}),
    '/v2/changes': (changes_controller.FILTERS, changes_controller.SORT_KEYS,
                    changes_controller.FILTER_SCHEMAS),
    '/v2/bitstreams': (fields.BITSTREAM_FILTERS, fields.BITSTREAM_SORT_KEYS,
                       bitstream_schema.LIST_FILTER_SCHEMAS),
    '/v2/leases': (lease_schema.FILTERS, lease_schema.SORT_KEYS,
                   lease_schema.FILTER_SCHEMAS),
    '/v2/rollouts': (rollout_schema.FILTERS, rollout_schema.SORT_KEYS,
                     rollout_schema.FILTER_SCHEMAS),
    # instance, bind_state and device_health are read before the list
    # query is validated; instance is documented in its canonical form
    # only (uuidutils also takes it without dashes, in braces, as a URN).
    '/v2/accelerator_requests': ((), arq_schema.SORT_KEYS,
                                 {'instance': arq_schema.CANONICAL_UUID,
                                  'bind_state': {'enum': ['resolved']},
                                  'device_health': {'enum': list(
                                      arq_schema.DEVICE_HEALTH)}}),
}
OTHER_QUERIES = {
    '/v2/hosts': host_schema.LIST_QUERY['properties'],
    '/v2/devices/{uuid}/health':
        devices_controller._HEALTH_QUERY['properties'],
    '/v2/availability': availability_schema.QUERY['properties'],
    '/v2/rollouts/{uuid}/targets':
        rollout_schema.TARGETS_QUERY['properties'],
    '/v2/usage': usage_schema.QUERY['properties'],
}


def _query_parameters(path, method):
    item = DOC['paths'][path]
    params = [_resolve(p) for p in item.get('parameters', []) +
              item[method].get('parameters', [])]
    return {p['name']: p for p in params if p['in'] == 'query'}


def test_query_parameters_are_those_the_api_validates():
    for path, (filters, sort_keys, extra) in LIST_QUERIES.items():
        expected = dict(validation.list_query_schema(filters, sort_keys)
                        ['properties'], **extra)
        documented = {name: p['schema'] for name, p in
                      _query_parameters(path, 'get').items()}
        assert documented == _plain(expected), path
    for path, expected in OTHER_QUERIES.items():
        documented = {name: p['schema'] for name, p in
                      _query_parameters(path, 'get').items()}
        assert documented == _plain(expected), path


# Taken but not documented: DELETE /v2/accelerator_requests/{uuid} also
# reads ?arqs= (ignored beside the uuid) and ?instance= (400 beside it).
UNDOCUMENTED_QUERIES = {
    ('/v2/accelerator_requests/{}', 'delete'): {'arqs', 'instance'},
}


def test_handlers_without_kwargs_take_the_documented_query():
    """pecan passes a handler the query parameters named in its signature
    (and drops the others); **kwargs handlers are checked above."""
    by_key = {(_normalize(p), m): p for p, item in DOC['paths'].items()
              for m in item if m in HTTP_METHODS}
    for route in served_routes():
        path = by_key[route.key]
        documented = set(_query_parameters(path, route.method))
        if route.query_args is None:
            assert route.method == 'get' and (
                path in LIST_QUERIES or path in OTHER_QUERIES), route
            continue
        # Every documented one is taken; every one taken is documented,
        # but for the item id that pecan also takes by name.
        assert documented <= route.query_args, route
        names, _, _ = _signature(route.handler)
        assert route.query_args - set(names[:1]) - \
            UNDOCUMENTED_QUERIES.get(route.key, set()) <= documented, route


def test_every_v2_operation_documents_versioning():
    assert DOC['info']['version'] == str(microversion.MAX_VERSION)
    assert '%s - ' % microversion.MAX_VERSION in DOC['info']['description']
    for path, item in DOC['paths'].items():
        for method, op in item.items():
            if method not in HTTP_METHODS:
                continue
            refs = [p.get('$ref') for p in op.get('parameters', [])]
            if path.startswith('/v2'):
                assert '#/components/parameters/ApiVersion' in refs, path
                assert {'400', '406'} <= set(op['responses']), path
            else:
                assert '#/components/parameters/ApiVersion' not in refs
            assert 'default' in op['responses'], (path, method)


# -- the service answers as documented ----------------------------------------

def _today():
    return datetime.datetime.now(datetime.timezone.utc).date()


def _days(n):
    return datetime.timedelta(days=n)


@pytest.fixture(scope='module')
def cloud():
    cloud = cloud_module.Cloud(overrides={
        ('quota', 'default_limits'): {'FPGA': '10'},
        # A failing test must not wait long for programming to time out.
        ('conductor', 'agent_timeout'): 20,
        # Rollouts step every second (a rollout runs to its end).
        ('rollouts', 'interval'): 1},
        # The agent fetches the firmware it flashes from the API.
        http=True).start()
    try:
        yield cloud
    finally:
        cloud.stop()


class Checker:
    """Sends requests and checks each answer against the document."""

    def __init__(self, app):
        self.app = app
        self.seen = set()
        self.templates = {}
        for path in DOC['paths']:
            pattern = re.sub(r'\\\{[^}]*\\\}', '[^/]+', re.escape(path))
            self.templates[path] = re.compile('^%s$' % pattern)

    def template_of(self, path):
        matches = [t for t, rx in self.templates.items() if rx.match(path)]
        # A literal segment wins over a parameter (/v2/devices/{uuid}/health
        # is not /v2/devices/{uuid}).
        matches.sort(key=lambda t: t.count('{'))
        assert matches, 'no documented path matches %s' % path
        return matches[0]

    def __call__(self, method, url, body=None, version=None,
                 expect=None, accept='application/json', raw=None):
        headers = {'Accept': accept}
        if version:
            headers['OpenStack-API-Version'] = 'accelerator %s' % version
        request = webob.Request.blank(url, method=method.upper(),
                                      headers=headers)
        if raw is not None:
            request.body = raw
            request.content_type = 'application/octet-stream'
        if body is not None:
            request.body = json.dumps(body).encode()
            request.content_type = 'application/json'
        response = request.get_response(self.app)
        path = self.template_of(request.path_info)
        self.check(path, method.lower(), response)
        if expect is not None:
            assert response.status_int == expect, (
                method, url, response.status, response.body)
        return response

    def check(self, path, method, response):
        # A method the path does not declare gets the generic error answer.
        operation = DOC['paths'][path].get(method) or {'responses': {
            'default': {'$ref': '#/components/responses/Error'}}}
        status = str(response.status_int)
        where = '%s %s -> %s %s' % (method.upper(), path, status,
                                    response.body[:300])
        if response.status_int < 400:
            assert status in operation['responses'], where
        spec = _deref(operation['responses'].get(
            status, operation['responses'].get('default')))
        assert spec is not None, where
        self.seen.add((path, method, status))
        for name, header in spec.get('headers', {}).items():
            # Ours are always sent unless declared ``required: false``.
            if _deref(header).get('required', True):
                assert name in response.headers, '%s: no %s header' % (
                    where, name)
        content = spec.get('content')
        if method == 'head':
            assert response.body == b'', where
            return
        if not content:
            assert response.body == b'', where
            assert 'Content-Type' not in response.headers, where
            return
        media = response.content_type
        assert media in content, '%s: content type %s' % (where, media)
        if media == 'application/octet-stream':
            assert response.body, where
            return
        if media == 'application/yaml':
            _validate(yaml.safe_load(response.body),
                      content[media]['schema'], where)
            return
        assert media == 'application/json', where
        body = response.json
        _validate(body, content[media]['schema'], where)
        if response.status_int >= 400:
            _validate(json.loads(body['error_message']),
                      {'$ref': '#/components/schemas/Fault'}, where)


def _deref(node):
    while node is not None and '$ref' in node:
        target = DOC
        for part in node['$ref'].lstrip('#/').split('/'):
            target = target[part.replace('~1', '/').replace('~0', '~')]
        node = target
    return node


def _validate(instance, schema, where):
    # Local refs (#/components/...) resolve against the root schema, so
    # carry the components along; other keys are ignored by JSON schema.
    root_schema = dict(schema, components=DOC['components'])
    validator = jsonschema.Draft202012Validator(
        root_schema, format_checker=jsonschema.Draft202012Validator
        .FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(instance), key=str)
    assert not errors, '%s: %s' % (where, errors[0])


def _collection_key(body):
    [key] = [k for k, v in body.items() if isinstance(v, list)
             and k != 'group_by']   # the feed says how it grouped
    return key


def test_answers_match_the_document(cloud):
    call = Checker(cloud.app)
    max_version = DOC['info']['version']

    # Fill every list: a profile, ARQs (one bound), an attribute and a
    # programming operation.
    profile = call('post', '/v2/device_profiles', expect=201, body=[{
        'name': 'openapi-fpga', 'description': None,
        'groups': [{'resources:FPGA': '1',
                    'trait:CUSTOM_FPGA_INTEL_N3000': 'required'}]}]).json
    arqs = call('post', '/v2/accelerator_requests', expect=201,
                body={'device_profile_name': 'openapi-fpga'}).json['arqs']
    unbound = call('post', '/v2/accelerator_requests', expect=201,
                   body={'device_profile_name': 'openapi-fpga',
                         'device_profile_group_id': None,
                         'image_uuid': None}).json['arqs'][0]
    region0, region1 = sorted(
        call('get', '/v2/deployables?name=region0').json['deployables'] +
        call('get', '/v2/deployables?name=region1').json['deployables'],
        key=lambda d: d['name'])
    instance = str(uuidlib.uuid4())
    call('patch', '/v2/accelerator_requests', expect=202, body={
        arqs[0]['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': region0['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})
    cloud.wait_for(lambda: call(
        'get', '/v2/accelerator_requests?instance=%s&bind_state=resolved'
        % instance).status_int == 200)
    bound = call('get', '/v2/accelerator_requests/%s' % arqs[0]['uuid'],
                 expect=200).json
    assert bound['state'] == 'Bound' and bound['attach_handle_info']
    # A driver operation on the FPGAs waits for that binding to go; it is
    # cancelled meanwhile.
    cloud.services[1].tracker.heartbeat()
    cloud.wait_for(lambda: call('get', '/v2/hosts/%s' % cloud_module.HOST)
                   .json['agent_version'] == '1.2')
    assert call('patch', '/v2/hosts/%s' % cloud_module.HOST, body={
        'labels': {'ring': 'canary', 'rack': None}}).json['labels'] == {
        'ring': 'canary'}
    waiting = call('post', '/v2/hosts/%s/driver_operations'
                   % cloud_module.HOST, expect=202,
                   body={'action': 'verify', 'family': 'opae',
                         'wait_for_release': 60})
    call('post', '/v2/operations/%s/cancel' % waiting.json['uuid'],
         expect=202)
    assert cloud.wait_for(lambda: call(
        'get', waiting.headers['Location']).json['state'] == 'cancelled')
    call('post', '/v2/operations/%s/cancel' % waiting.json['uuid'],
         expect=409)
    call('post', '/v2/attributes', expect=201, body={
        'deployable_id': 1, 'key': 'openapi', 'value': 'CUSTOM_X'})
    image = call('post', '/v2/bitstreams', expect=201,
                 body={'name': 'openapi-image'}).json['uuid']
    call('put', '/v2/bitstreams/%s/data' % image, raw=b'image data',
         expect=200)
    started = call('patch', '/v2/deployables/%s/program' % region1['uuid'],
                   expect=202, body=[{'op': 'replace',
                                      'path': '/bitstream_id',
                                      'value': [{'image_uuid':
                                                 'bs-crypto-1'}]}])
    # Let it finish: stopping the cloud mid-programming waits for the
    # conductor's call to the (stopped) agent to time out.
    operation = started.headers['Location']
    assert started.json['operation']['links'][0]['href'] == operation
    assert cloud.wait_for(lambda: call('get', operation, expect=200)
                          .json['state'] == 'succeeded')

    # A rollout (ours) of that bitstream to region1 again, to its end; a
    # dry run of it.
    rollout = {'kind': 'bitstream', 'image': 'bs-crypto-1',
               'selector': {'deployable_names': ['region1']}}
    call('post', '/v2/rollouts', expect=200, body=dict(rollout,
                                                        dry_run=True))
    rolled = call('post', '/v2/rollouts', expect=201, body=rollout).json
    assert cloud.wait_for(lambda: call(
        'get', '/v2/rollouts/%s' % rolled['uuid']).json['state'] ==
        'succeeded', 30)
    call('get', '/v2/rollouts/%s/targets?state=done' % rolled['uuid'],
         expect=200)
    call('post', '/v2/rollouts/%s/pause' % rolled['uuid'], expect=409)
    call('post', '/v2/rollouts/%s/rollback' % rolled['uuid'], expect=200)
    assert cloud.wait_for(lambda: call(
        'get', '/v2/rollouts/%s' % rolled['uuid']).json['state'] ==
        'rolled_back', 30)
    again = call('post', '/v2/rollouts', expect=201, body=rollout).json
    for action in ('pause', 'resume', 'abort'):
        call('post', '/v2/rollouts/%s/%s' % (again['uuid'], action),
             expect=200)

    # Leases (ours): one to list and give back, one revoked at the end.
    lessor_view = {'resource_class': 'PGPU', 'count': 1, 'timezone': 'UTC',
                   'start': '%sT10:00' % (_today() + _days(2)),
                   'end': '%sT11:00' % (_today() + _days(2))}
    call('post', '/v2/leases', expect=201, body=lessor_view)
    given = call('post', '/v2/leases', expect=201, body=dict(
        lessor_view, start=lessor_view['start'].replace('T10', 'T12'),
        end=lessor_view['end'].replace('T11', 'T13'))).json
    call('post', '/v2/leases/%s/give_back' % given['uuid'], expect=200)
    call('post', '/v2/leases', expect=409, body=dict(lessor_view, count=3))
    call('get', '/v2/availability?at=%sT10:30Z' % (_today() + _days(2)),
         expect=200)

    # Every documented GET, at the oldest and the newest microversion.
    for version in ('2.0', max_version):
        for path, item in DOC['paths'].items():
            if 'get' not in item or not path.startswith('/v2') or \
                    '{' in path:
                continue
            listed = call('get', path, version=version, expect=200).json
            if path == '/v2':
                continue
            items = listed[_collection_key(listed)]
            assert items, '%s lists nothing: fill it above' % path
            for sub, sub_item in DOC['paths'].items():
                if 'get' in sub_item and sub.startswith(path + '/{'):
                    key = items[0].get('uuid') or items[0]['hostname']
                    url = re.sub(r'\{[^}]*\}', key, sub)
                    call('get', url, version=version, expect=200)
        call('get', '/v2/devices?limit=1', version=version, expect=200)
    devices = call('get', '/v2/devices', version=max_version).json
    assert all('status' in d for d in devices['devices'])
    assert all('status' not in d for d in
               call('get', '/v2/devices', version='2.0').json['devices'])

    # The other documented successes.
    device = devices['devices'][0]['uuid']
    call('post', '/v2/devices/%s/disable' % device, version=max_version,
         expect=200)
    call('post', '/v2/devices/%s/enable' % device, expect=200)
    quota = call('get', '/v2/quotas/%s' % hooks.NOAUTH_PROJECT,
                 expect=200).json['quota']
    assert quota['limits'] == {'FPGA': 10} and quota['usage']
    quota = call('put', '/v2/quotas/openapi-project', expect=200,
                 body={'limits': {'FPGA': 1, 'PGPU': -1}}).json['quota']
    assert quota['sources'] == {'FPGA': 'project', 'PGPU': 'project'}
    call('put', '/v2/quotas/openapi-project', expect=400,
         body={'limits': {'WIDGET': 1}})
    call('delete', '/v2/quotas/openapi-project', expect=204)
    call('get', '/v2/device_profiles/openapi-fpga', version='2.2',
         expect=200)
    call('get', '/v2/accelerator_requests?instance=%s&bind_state=resolved'
         % instance, expect=200)
    call('patch', '/v2/accelerator_requests/%s' % arqs[0]['uuid'],
         expect=202, body=[{'op': 'remove', 'path': '/instance_uuid'}])
    call('delete', '/v2/accelerator_requests/%s' % arqs[0]['uuid'],
         expect=204)
    call('delete', '/v2/accelerator_requests?instance=%s' % instance,
         expect=204)
    # Standalone scheduling of the other ARQ (ours; the module's other
    # tests, in any order, may have left ARQs of their own).
    call('post', '/v2/accelerator_requests/%s/schedule' % unbound['uuid'],
         expect=202, body={'instance_uuid': str(uuidlib.uuid4()),
                           'preferences': {'strategy': 'spread'}})
    call('delete', '/v2/accelerator_requests?arqs=%s' % ','.join(
        a['uuid'] for a in call('get', '/v2/accelerator_requests')
        .json['arqs']), expect=204)
    attribute = call('get', '/v2/attributes?key=openapi').json
    call('delete', '/v2/attributes/%s' % attribute['attributes'][0]['uuid'],
         expect=204)
    call('post', '/v2/device_profiles', expect=201,
         body={'name': 'openapi-two', 'groups': [{'resources:PGPU': '1'}]})
    call('delete', '/v2/device_profiles?value=openapi-two', expect=204)
    call('delete', '/v2/device_profiles/%s' % profile['uuid'], expect=204)
    # Flash the FPGA (nothing holds it any more) with catalog firmware.
    [fpga] = [d for d in devices['devices'] if d['type'] == 'FPGA']
    firmware = call('post', '/v2/bitstreams', expect=201, body={
        'name': 'openapi-firmware', 'kind': 'firmware',
        'vendor': fpga['vendor']}).json['uuid']
    call('put', '/v2/bitstreams/%s/data' % firmware,
         raw=b'{"version": "2.0"}\n', expect=200)
    flashing = call('post', '/v2/devices/%s/firmware' % fpga['uuid'],
                    expect=202, body={'image_uuid': firmware})
    assert cloud.wait_for(lambda: call(
        'get', flashing.headers['Location'], expect=200)
        .json['state'] == 'succeeded')
    # Cut the A100 into two MIG devices, then give the whole GPU back.
    [a100] = [d for d in devices['devices'] if d['model'] == 'A100']
    for layout in (['3g.40gb', '4g.40gb'], []):
        cutting = call('post', '/v2/devices/%s/mig_layout' % a100['uuid'],
                       expect=202, body={'layout': layout})
        assert cloud.wait_for(lambda: call(
            'get', cutting.headers['Location'], expect=200)
            .json['state'] == 'succeeded')
    call('post', '/v2/devices/%s/mig_layout' % fpga['uuid'], expect=409,
         body={'layout': []})
    lease = call('get', '/v2/leases?state=active').json['leases'][0]
    call('delete', '/v2/leases/%s' % lease['uuid'], expect=200)
    call('get', '/v2/bitstreams/%s/data' % image,
         accept='application/octet-stream', expect=200)
    call('put', '/v2/bitstreams/%s/data' % image, raw=b'again', expect=409)
    call('delete', '/v2/bitstreams/%s' % image, expect=204)

    # Errors, in the one error format.
    call('get', '/v2/devices/%s' % UNKNOWN, expect=404)
    call('get', '/v2/devices?colour=red', expect=400)
    call('get', '/v2/devices', version='9.9', expect=406)
    call('get', '/v2/device_profiles/openapi-fpga', expect=406)
    call('post', '/v2/device_profiles', body={'name': 'x'}, expect=400)
    duplicate = {'name': 'openapi-dup', 'groups': [{'resources:FPGA': '1'}]}
    call('post', '/v2/device_profiles', body=duplicate, expect=201)
    call('post', '/v2/device_profiles', body=duplicate, expect=409)
    call('get', '/v2/accelerator_requests?bind_state=bound', expect=400)
    call('delete', '/v2/accelerator_requests', expect=400)

    # The statuses above, checked: every documented success was seen.
    successes = {(path, method, status)
                 for path, item in DOC['paths'].items()
                 for method, op in item.items() if method in HTTP_METHODS
                 for status in op['responses']
                 if status.startswith('2')
                 and not path.startswith('/openapi') and path != '/'}
    missed = sorted(successes - call.seen)
    assert not missed, 'documented answers not exercised: %s' % missed


def test_the_lock_answer_of_a_binding_in_progress(cloud, monkeypatch):
    """423 without a body while an instance's ARQs are not resolved."""
    call = Checker(cloud.app)
    call('post', '/v2/device_profiles', expect=201,
         body={'name': 'openapi-423', 'groups': [{'resources:FPGA': '1'}]})
    arq = call('post', '/v2/accelerator_requests', expect=201,
               body={'device_profile_name': 'openapi-423'}).json['arqs'][0]
    # Hold the binding in BindStarted: the conductor's worker is not run.
    monkeypatch.setattr(cloud.services[0].manager.binding, '_bind',
                        lambda *args, **kwargs: None)
    instance = str(uuidlib.uuid4())
    deployables = call('get', '/v2/deployables?name=region0').json
    call('patch', '/v2/accelerator_requests', expect=202, body={
        arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': deployables['deployables'][0]['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})
    call('get', '/v2/accelerator_requests?instance=%s&bind_state=resolved'
         % instance, expect=423)


# -- served -------------------------------------------------------------------

def test_the_document_is_served(cloud):
    call = Checker(cloud.app)
    as_yaml = call('get', '/openapi.yaml', expect=200, accept='*/*')
    with open(openapi.PATH, 'rb') as f:
        assert as_yaml.body == f.read()
    assert as_yaml.content_type == 'application/yaml'
    as_json = call('get', '/openapi.json', expect=200)
    assert as_json.content_type == 'application/json'
    assert as_json.json == _document()
    assert json.loads(openapi.json_text()) == yaml.safe_load(as_yaml.body)
    # Not microversioned.
    assert 'OpenStack-API-Version' not in as_json.headers
    call('get', '/', expect=200)
    call('get', '/openapi.json',
         version='9.9', expect=200)


# -- what the document declares is what the API takes -------------------------

def _concrete(path):
    """A path of the document with its parameters filled in."""
    return re.sub(r'\{[^}]*\}', UNKNOWN, path)


def test_allow_is_what_the_document_declares_on_every_path(cloud):
    """Every method a path does not declare (OPTIONS and HEAD included) is
    405 with exactly the declared methods in Allow; declared ones are not
    405."""
    call = Checker(cloud.app)
    for path, item in DOC['paths'].items():
        declared = {m.upper() for m in item if m in HTTP_METHODS}
        for method in HTTP_METHODS:
            response = call(method, _concrete(path))
            if method.upper() in declared:
                assert response.status_int != 405, (method, path)
                continue
            assert response.status_int == 405, (method, path,
                                                response.status)
            allow = {m.strip() for m in response.headers['Allow'].split(',')}
            assert allow == declared, (method, path, allow)


def test_a_parameterless_path_below_a_template_is_405_not_404(cloud):
    # pecan alone answers 404 (GET) and Allow: GET (PUT) here.
    call = Checker(cloud.app)
    response = call('get', '/v2/devices/%s/disable' % UNKNOWN, expect=405)
    assert response.headers['Allow'] == 'POST'
    response = call('put', '/v2/deployables/%s/program' % UNKNOWN,
                    expect=405)
    assert response.headers['Allow'] == 'PATCH'


def _declared_versions():
    header = _deref({'$ref': '#/components/parameters/ApiVersion'})
    return set(header['schema']['enum'])


def test_the_version_header_declares_exactly_the_supported_range():
    supported = set()
    for major in range(0, 4):
        for minor in range(0, 12):
            version = microversion.Version(major, minor)
            if microversion.MIN_VERSION <= version <= microversion.MAX_VERSION:
                supported.add('accelerator %s' % version)
    # Empty is served as absent, at the minimum.
    assert _declared_versions() == supported | {'accelerator latest', ''}


def test_every_version_the_header_declares_is_served(cloud):
    call = Checker(cloud.app)
    for value in _declared_versions():
        response = webob.Request.blank(
            '/v2/devices', headers={'OpenStack-API-Version': value}
        ).get_response(cloud.app)
        call.check('/v2/devices', 'get', response)
        assert response.status_int == 200, (value, response.body)
        version = value.split()[-1] if value else '2.0'
        if version == 'latest':
            version = str(microversion.MAX_VERSION)
        assert response.headers['OpenStack-API-Version'] == \
            'accelerator %s' % version


def test_uuid_path_parameters_are_declared_as_uuids():
    uuid_schema = _deref({'$ref': '#/components/parameters/Uuid'})['schema']
    assert uuid_schema['format'] == 'uuid'
    pattern = re.compile(uuid_schema['pattern'])
    assert pattern.search(str(uuidlib.uuid4()))
    assert not pattern.search('not-a-uuid')
    for path, item in DOC['paths'].items():
        for parameter in item.get('parameters', []):
            parameter = _deref(parameter)
            if parameter['in'] == 'path' and parameter['name'] == 'uuid':
                assert parameter['schema'] == uuid_schema, path
        if '{uuid}' in path:
            assert {'$ref': '#/components/parameters/Uuid'} in \
                item['parameters'], path


def _documented_body_schema(path, method):
    schema = _operation(path, method)['requestBody']['content'][
        'application/json']['schema']
    return dict(schema, components=DOC['components'])


_BIND = [{'op': 'add', 'path': '/hostname', 'value': 'compute-1'},
         {'op': 'add', 'path': '/device_rp_uuid', 'value': UNKNOWN},
         {'op': 'add', 'path': '/instance_uuid', 'value': UNKNOWN}]
# Bodies the API refuses (400) for reasons the document must state, so
# that a client (or schemathesis) reading it does not send them.
REFUSED_BODIES = [
    ('/v2/accelerator_requests', 'patch', {UNKNOWN: _BIND + [
        {'op': 'add', 'path': '/hostname'}]}),
    ('/v2/accelerator_requests', 'patch', {UNKNOWN: _BIND[:2]}),
    ('/v2/accelerator_requests', 'patch', {UNKNOWN: _BIND + [
        {'op': 'remove', 'path': '/hostname'}]}),
    ('/v2/accelerator_requests', 'patch', {
        UNKNOWN: _BIND,
        str(uuidlib.uuid4()): [{'op': 'remove', 'path': '/hostname'}]}),
    ('/v2/accelerator_requests/{uuid}', 'patch', _BIND[1:]),
    ('/v2/attributes', 'post', {'deployable_id': 1, 'key': 'k',
                                'value': 'a\x00b'}),
    ('/v2/attributes', 'post', {'deployable_id': 2 ** 63, 'key': 'k',
                                'value': 'v'}),
    ('/v2/device_profiles', 'post', {
        'name': 'nul', 'groups': [{'accel:vendor': '\x00'}]}),
    ('/v2/device_profiles', 'post', {
        'name': 'unknown-trait',
        'groups': [{'resources:FPGA': '1', 'trait:FPGA_INTEL': 'required'}]}),
    ('/v2/deployables/{uuid}/program', 'patch', [
        {'op': 'replace', 'path': '/bitstream_id',
         'value': [{'image_uuid': 'bs-crypto-1', 'x': '\x00'}]}]),
]


@pytest.mark.parametrize('path, method, body', REFUSED_BODIES)
def test_what_the_api_refuses_the_document_refuses(cloud, path, method,
                                                   body):
    validator = jsonschema.Draft202012Validator(
        _documented_body_schema(path, method))
    assert not validator.is_valid(body), (path, method, body)
    response = Checker(cloud.app)(method, _concrete(path), body=body)
    assert response.status_int == 400, (path, method, response.body)
