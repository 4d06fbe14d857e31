"""The read model's two tables have one source each and cannot drift:
every conductor RPC client method is classified read, write or local
(conductor/rpc_calls.py), and every handler served from the copies has
the ETag hook's policy rule, the rule it authorizes itself
(api/read_model/etag.py)."""

import ast
import inspect
import textwrap

import pytest
from pecan import rest

from cyborg_like.api.controllers import v2
from cyborg_like.api.read_model import etag
from cyborg_like.api.read_model import proxy
from cyborg_like.conductor import rpc_calls
from cyborg_like.conductor import rpcapi

CLASSES = {'read': rpc_calls.READS, 'write': set(rpc_calls.WRITES),
           'local': rpc_calls.LOCAL}


def _methods(cls):
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith('_')}


def _misclassified(cls):
    """{method: the classes it is in} for each public method of ``cls``
    in none or in more than one."""
    found = {}
    for name in _methods(cls):
        kinds = [kind for kind, names in CLASSES.items() if name in names]
        if len(kinds) != 1:
            found[name] = kinds
    return found


def test_every_conductor_rpc_method_is_classified_once():
    assert _misclassified(rpcapi.ConductorAPI) == {}


def test_a_method_added_without_a_class_is_found():
    class Grown(rpcapi.ConductorAPI):
        def rename_device(self, context, uuid, name):
            """Neither read nor write."""

    assert _misclassified(Grown) == {'rename_device': []}


def test_no_classification_names_a_method_that_is_gone():
    named = set().union(*CLASSES.values())
    assert named - _methods(rpcapi.ConductorAPI) == set()


def test_a_write_changes_only_copied_families():
    copied = {family for _p, family, _a, _c in etag.SERVED}
    changed = set().union(*rpc_calls.WRITES.values())
    assert changed <= copied


def _served_reads():
    """The conductor reads the proxy answers from the copies (ARQ answers
    are kept, not copied, and carry no ETag)."""
    return {name for name in vars(proxy.ModelledConductorAPI)
            if name in rpc_calls.READS and name not in proxy.ENDED_BY}


def _authorizes(function):
    """(rule, checked with the cloud scope) of the handler's first
    policy.authorize call, or None."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and \
                ast.unparse(node.func) == 'policy.authorize':
            cloud = len(node.args) > 2 and \
                ast.unparse(node.args[2]) == 'policy.CLOUD'
            return node.args[0].value, cloud
    return None


def _calls(function):
    return {node.func.attr for node in ast.walk(function)
            if isinstance(node, ast.Call) and
            isinstance(node.func, ast.Attribute)}


def _read_handlers():
    """[(request path, handler name, its (rule, cloud))] of the GET
    handlers of /v2 that call a read the copies answer."""
    found = []
    for route, controller in vars(v2.V2Controller).items():
        if not isinstance(controller, rest.RestController):
            continue
        source = textwrap.dedent(inspect.getsource(type(controller)))
        for node in ast.parse(source).body[0].body:
            if not isinstance(node, ast.FunctionDef) or \
                    node.name not in ('get_all', 'get_one'):
                continue
            if _calls(node) & _served_reads():
                path = '/v2/%s' % route + (
                    '/an-id' if node.name == 'get_one' else '')
                found.append((path, node.name, _authorizes(node)))
    return found


def _known(path):
    return next(((rule, cloud) for pattern, _f, _a, rule, cloud
                 in etag._KNOWN_AHEAD if pattern.match(path)), None)


def test_the_read_handlers_are_found():
    # All eight reads of the four collections the copies hold.
    assert len(_read_handlers()) == 2 * len(etag.SERVED)


@pytest.mark.parametrize('path,handler,authorized', _read_handlers())
def test_every_read_handler_has_its_own_rule_in_the_etag_hook(
        path, handler, authorized):
    assert authorized is not None, '%s checks no policy' % handler
    assert _known(path) == authorized


def test_a_served_collection_without_a_documented_rule_is_refused(
        monkeypatch):
    monkeypatch.setattr(etag, 'SERVED', etag.SERVED + (
        ('/v2/widgets', 'widgets', False, True),))
    with pytest.raises(LookupError, match='GET /v2/widgets'):
        etag._known_ahead()

