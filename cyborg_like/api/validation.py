"""JSON-schema validation of query strings and bodies."""

import jsonschema
import webob.exc


def validate(schema, document, what='query'):
    """Raise 400 naming the offending field when ``document`` is invalid."""
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is None:
        return document
    field = '/'.join(str(p) for p in error.absolute_path)
    if error.validator == 'additionalProperties':
        detail = 'Invalid %s%s: %s' % (
            what, ' at ' + field if field else '', error.message)
    else:
        detail = 'Invalid %s parameter %s: %s' % (
            what, field or '(root)', error.message)
    raise webob.exc.HTTPBadRequest(detail=detail)


def list_query_schema(filters, sort_keys):
    """The query of a list: filters plus limit, marker, sort_key/dir."""
    properties = {name: {'type': 'string', 'minLength': 1, 'maxLength': 255}
                  for name in filters}
    properties.update({
        'limit': {'type': 'string', 'pattern': '^[1-9][0-9]{0,8}$'},
        'marker': {'type': 'string', 'format': 'uuid', 'minLength': 36,
                   'maxLength': 36},
        'sort_key': {'enum': list(sort_keys)},
        'sort_dir': {'enum': ['asc', 'desc']},
    })
    return {'type': 'object', 'properties': properties,
            'additionalProperties': False}


def body(request, schema):
    """The request's JSON body, validated against ``schema``."""
    try:
        document = request.json_body
    except ValueError:
        raise webob.exc.HTTPBadRequest(
            detail='The request body is not valid JSON.')
    return validate(schema, document, what='body')
