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
import inspect
import json
import re
import uuid as uuidlib

import jsonschema
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
from cyborg_like.api.controllers.v2 import operations as operations_controller
from cyborg_like.api.schemas import accelerator_requests as arq_schema
from cyborg_like.api.schemas import attributes as attribute_schema
from cyborg_like.api.schemas import deployables as deployable_schema
from cyborg_like.api.schemas import device_profiles as profile_schema
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


def _route(method, path, handler, n_path_args):
    names, _, kwargs = _signature(handler)
    path_args = names[:n_path_args]
    query = None if kwargs else set(names[n_path_args:])
    for name in path_args:
        path += '/{%s}' % name
    return Route(method, path, handler, path_args, query)


def _rest_routes(controller, prefix):
    """Every route of a RestController, the way pecan.rest dispatches."""
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
        if name == 'get_all':
            assert required == 0, handler
            shapes = [0]
        elif name == 'get_one':
            shapes = [1]
        else:
            # The first argument is the item's id, from the path; with a
            # default the collection takes the method as well.
            shapes = [min(required, 1)]
            if names and required == 0:
                shapes.append(1)
        routes += [_route(method, prefix, handler, n) for n in shapes]

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
            routes += _rest_routes(value, prefix.rstrip('/') + '/' + name)
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
    assert ('/v2/hosts/{}', 'get') not in keys


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


def _plain(schema):
    """A Python schema as JSON would carry it (tuples become lists)."""
    return json.loads(json.dumps(schema))


def _operation(path, method):
    return DOC['paths'][path][method]


REQUEST_BODIES = {
    ('/v2/device_profiles', 'post'): profile_schema.CREATE,
    ('/v2/attributes', 'post'): attribute_schema.CREATE,
    ('/v2/deployables/{uuid}/program', 'patch'): deployable_schema.PROGRAM,
    ('/v2/accelerator_requests', 'post'): arq_schema.CREATE,
    ('/v2/accelerator_requests', 'patch'): arq_schema.PATCH_MANY,
    # A list of ops; an object is taken as the bulk form (openstacksdk).
    ('/v2/accelerator_requests/{uuid}', 'patch'): {
        'oneOf': [arq_schema.PATCH_ONE, arq_schema.PATCH_MANY]},
}


def test_request_bodies_are_the_schemas_the_api_validates_with():
    with_body = {(path, method) for path, item in DOC['paths'].items()
                 for method, op in item.items()
                 if method in HTTP_METHODS and 'requestBody' in op}
    assert with_body == set(REQUEST_BODIES)
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
                       attribute_schema.SORT_KEYS, {}),
    '/v2/device_profiles': (profile_schema.LIST_FILTERS,
                            profile_schema.SORT_KEYS, {}),
    '/v2/operations': (operations_controller.FILTERS,
                       operations_controller.SORT_KEYS, {}),
    # instance and bind_state are read before the list query is validated.
    '/v2/accelerator_requests': ((), arq_schema.SORT_KEYS,
                                 {'instance': {'type': 'string'},
                                  'bind_state': {'enum': ['resolved']}}),
}
OTHER_QUERIES = {
    '/v2/devices/{uuid}/health':
        devices_controller._HEALTH_QUERY['properties'],
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

@pytest.fixture(scope='module')
def cloud():
    cloud = cloud_module.Cloud(overrides={
        ('quota', 'default_limits'): {'FPGA': '10'},
        # A failing test must not wait long for programming to time out.
        ('conductor', 'agent_timeout'): 20}).start()
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
                 expect=None, accept='application/json'):
        headers = {'Accept': accept}
        if version:
            headers['OpenStack-API-Version'] = 'accelerator %s' % version
        request = webob.Request.blank(url, method=method.upper(),
                                      headers=headers)
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
        operation = DOC['paths'][path][method]
        status = str(response.status_int)
        where = '%s %s -> %s %s' % (method.upper(), path, status,
                                    response.body[:300])
        if response.status_int < 400:
            assert status in operation['responses'], where
        spec = _deref(operation['responses'].get(
            status, operation['responses'].get('default')))
        assert spec is not None, where
        self.seen.add((path, method, status))
        for name in spec.get('headers', {}):
            assert name in response.headers, '%s: no %s header' % (
                where, name)
        content = spec.get('content')
        if not content:
            assert response.body == b'', where
            assert 'Content-Type' not in response.headers, where
            return
        media = response.content_type
        assert media in content, '%s: content type %s' % (where, media)
        if media != 'application/json':
            return
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
    [key] = [k for k, v in body.items() if isinstance(v, list)]
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
    call('post', '/v2/accelerator_requests', expect=201,
         body={'device_profile_name': 'openapi-fpga',
               'device_profile_group_id': None, 'image_uuid': None})
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
    call('post', '/v2/attributes', expect=201, body={
        'deployable_id': 1, 'key': 'openapi', 'value': 'CUSTOM_X'})
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
                    url = re.sub(r'\{[^}]*\}', items[0]['uuid'], sub)
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
    monkeypatch.setattr(cloud.services[0].manager, '_bind',
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
