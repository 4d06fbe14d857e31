import re

import pytest
import webob.exc

from cyborg_like.api import validation
from cyborg_like.api.controllers.v2 import devices
from cyborg_like.api.schemas import accelerator_requests as arq_schema
from cyborg_like.api.schemas import attributes as attribute_schema
from cyborg_like.api.schemas import deployables as deployable_schema
from cyborg_like.api.schemas import device_profiles as profile_schema

NAME = {'type': 'object', 'properties': {
    'name': {'type': 'string', 'maxLength': 10}}}


def _nested(depth):
    document = []
    for _ in range(depth - 1):
        document = [document]
    return document


@pytest.mark.parametrize('document', [
    {'a': '\ud800'}, {'\udfff': 1}, ['x\x00y'], {'n': 2 ** 63},
    {'n': -2 ** 63 - 1}, _nested(33),
])
def test_what_cannot_be_stored_is_refused(document):
    with pytest.raises(webob.exc.HTTPBadRequest):
        validation.check_storable(document)


@pytest.mark.parametrize('document', [
    {'a': 'é✓'}, {'n': 2 ** 63 - 1}, {'n': -2 ** 63}, [True, None, 1.5],
    _nested(32),
])
def test_what_can_be_stored_passes(document):
    assert validation.check_storable(document) == document


def test_a_deep_document_is_refused_without_recursion():
    document = []
    for _ in range(100000):
        document = [document]
    with pytest.raises(webob.exc.HTTPBadRequest) as raised:
        validation.check_storable(document)
    assert 'nested deeper than 32' in raised.value.detail


def test_errors_quote_a_short_excerpt_of_a_huge_value():
    with pytest.raises(webob.exc.HTTPBadRequest) as raised:
        validation.validate(NAME, {'name': 'x' * 10 ** 6}, 'body')
    assert 'is too long' in raised.value.detail
    assert len(raised.value.detail) < 200


def test_errors_quote_a_short_excerpt_of_a_huge_key():
    schema = {'type': 'object', 'additionalProperties': False}
    with pytest.raises(webob.exc.HTTPBadRequest) as raised:
        validation.validate(schema, {'k' * 10 ** 6: 1}, 'body')
    assert len(raised.value.detail) < 700


def _all_patterns(schema):
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == 'pattern':
                yield value
            elif key == 'patternProperties':
                yield from value
                yield from _all_patterns(list(value.values()))
            else:
                yield from _all_patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _all_patterns(item)


SCHEMAS = [profile_schema.CREATE, arq_schema.CREATE, arq_schema.PATCH_MANY,
           attribute_schema.CREATE, deployable_schema.PROGRAM,
           devices._HEALTH_QUERY,
           validation.list_query_schema(('name',), ('uuid',))]


def test_no_pattern_takes_a_trailing_newline():
    # jsonschema uses re.search, where "$" matches before a final "\n".
    patterns = {p for schema in SCHEMAS for p in _all_patterns(schema)}
    assert len(patterns) > 8
    assert [p for p in patterns if not p.endswith(r'\Z')] == []


@pytest.mark.parametrize('name, ok', [
    ('compute-1', True), ('compute-1.example.org', True), ('a' * 63, True),
    ('a' * 64, False), ('-compute', False), ('compute-', False),
    ('compute_1', False), ('compute 1', False), ('compute-1\n', False),
    ("x' OR 1=1", False), ('', False), ('a.' * 127 + 'a', True),
    ('a.' * 128 + 'a', False),
])
def test_host_names(name, ok):
    valid = re.search(arq_schema.HOSTNAME['pattern'], name) and len(
        name) <= arq_schema.HOSTNAME['maxLength']
    assert bool(valid) == ok
