"""JSON-schema validation of query strings and bodies.

Schema patterns end in ``\\Z``, never ``$``: jsonschema applies ``pattern``
with ``re.search``, and ``$`` also matches before a trailing newline (a
profile named ``"name\\n"`` would pass). The OpenAPI document, read by
ECMA-262 engines that know no ``\\Z``, spells the same patterns with ``$``,
which means the end of the string there (tests/functional/test_openapi.py
maps one onto the other when it compares them).
"""

import json

import jsonschema
import webob.exc

# Deeper documents are refused before anything recurses over them: no
# request of this API nests more than a few levels, and a few hundred
# levels exhaust Python's stack in the JSON parser or in jsonschema.
MAX_DEPTH = 32
# Integers the databases can store (SQLite and BIGINT are 64-bit).
MIN_INT, MAX_INT = -2 ** 63, 2 ** 63 - 1
# The longest piece of a client's value an error message quotes.
EXCERPT_LENGTH = 64
MAX_MESSAGE_LENGTH = 512
# A UUID in its canonical, hyphenated form.
UUID_PATTERN = r'^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\Z'
# Free text: anything but NUL, which PostgreSQL cannot store in text
# (check_storable refuses it in every string of a request). Said in the
# schemas too, so that the OpenAPI document says it.
NO_NUL_PATTERN = r'^[^\x00]*\Z'


def text(max_length=255, min_length=1):
    """The schema of a free string: bounded, without NUL."""
    return {'type': 'string', 'minLength': min_length,
            'maxLength': max_length, 'pattern': NO_NUL_PATTERN}


def excerpt(value):
    """``repr(value)``, cut short: error bodies must not echo 10 MB."""
    shown = repr(value)
    if len(shown) <= EXCERPT_LENGTH:
        return shown
    return shown[:EXCERPT_LENGTH] + '...'


def _refuse(what, problem):
    raise webob.exc.HTTPBadRequest(
        detail='Invalid %s: %s' % (what, problem))


def _check_scalar(value, what):
    if isinstance(value, str):
        try:
            value.encode('utf-8')
        except UnicodeEncodeError:
            _refuse(what, 'strings must be valid Unicode (a lone surrogate '
                          'such as "\\ud800" is not).')
        if '\x00' in value:
            # PostgreSQL cannot store it, and no name or id holds it.
            _refuse(what, 'strings must not contain NUL characters.')
    elif isinstance(value, int) and not isinstance(value, bool):
        if not MIN_INT <= value <= MAX_INT:
            _refuse(what, 'integers must fit in 64 bits.')


def check_storable(document, what='body'):
    """400 unless every value of ``document`` can be stored as it is:
    bounded nesting, 64-bit integers, strings without lone surrogates or
    NUL characters.
    Walks without recursion, so depth cannot exhaust the stack.
    """
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                _refuse(what, 'nested deeper than %d levels.' % MAX_DEPTH)
            if isinstance(value, dict):
                for key in value:
                    _check_scalar(key, what)
                children = value.values()
            else:
                children = value
            pending.extend((child, depth + 1) for child in children)
        else:
            _check_scalar(value, what)
    return document


def _message(error):
    """jsonschema's message with the offending value cut short."""
    message = error.message
    shown = repr(error.instance)
    if len(shown) > EXCERPT_LENGTH:
        message = message.replace(shown, excerpt(error.instance))
    if len(message) > MAX_MESSAGE_LENGTH:
        message = message[:MAX_MESSAGE_LENGTH] + '...'
    return message


def validate(schema, document, what='query'):
    """Raise 400 naming the offending field when ``document`` is invalid."""
    check_storable(document, what)
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is None:
        return document
    field = '/'.join(str(p) for p in error.absolute_path)
    field = excerpt(field)[1:-1] if len(field) > EXCERPT_LENGTH else field
    if error.validator == 'additionalProperties':
        detail = 'Invalid %s%s: %s' % (
            what, ' at ' + field if field else '', _message(error))
    else:
        detail = 'Invalid %s parameter %s: %s' % (
            what, field or '(root)', _message(error))
    raise webob.exc.HTTPBadRequest(detail=detail)


def list_query_schema(filters, sort_keys, filter_schemas=None):
    """The query of a list: filters (free text unless ``filter_schemas``
    says otherwise) plus limit, marker, sort_key/dir."""
    properties = {name: text() for name in filters}
    properties.update(filter_schemas or {})
    properties.update({
        'limit': {'type': 'string', 'pattern': r'^[1-9][0-9]{0,8}\Z'},
        'marker': {'type': 'string', 'format': 'uuid',
                   'pattern': UUID_PATTERN},
        'sort_key': {'enum': list(sort_keys)},
        'sort_dir': {'enum': ['asc', 'desc']},
    })
    return {'type': 'object', 'properties': properties,
            'additionalProperties': False}


def _parse(text):
    try:
        return json.loads(text)
    except RecursionError:
        _refuse('body', 'nested deeper than %d levels.' % MAX_DEPTH)
    except ValueError:
        # Also UnicodeDecodeError: the body is not UTF-8.
        raise webob.exc.HTTPBadRequest(
            detail='The request body is not valid JSON.')


def json_document(request):
    """The request's body parsed as JSON and fit to be stored.

    The content type was checked by app.JsonBodiesOnly before routing.
    """
    return check_storable(_parse(request.body), 'body')


def body(request, schema):
    """The request's JSON body, validated against ``schema``."""
    return validate(schema, json_document(request), what='body')
