"""JSON schemas of deployable requests."""

# "\Z", not "$", which also matches before a trailing newline.
_BITSTREAM_ID = {'type': 'string',
                 'pattern': r'^[A-Za-z0-9][A-Za-z0-9._-]*\Z',
                 'maxLength': 36}

# Cyborg's form: [{"op": "replace", "path": "/bitstream_id",
#                  "value": [{"image_uuid": "<id>"}]}]; a plain id is fine.
PROGRAM = {
    'type': 'array', 'minItems': 1, 'maxItems': 1,
    'items': {
        'type': 'object',
        'properties': {
            'op': {'enum': ['replace', 'add']},
            'path': {'const': '/bitstream_id'},
            'value': {'oneOf': [
                _BITSTREAM_ID,
                {'type': 'array', 'minItems': 1, 'maxItems': 1,
                 'items': {'type': 'object',
                           'properties': {'image_uuid': _BITSTREAM_ID},
                           'required': ['image_uuid'],
                           'additionalProperties': False}}]},
        },
        'required': ['op', 'path', 'value'],
        'additionalProperties': False,
    },
}


def bitstream_id(program):
    value = program[0]['value']
    return value if isinstance(value, str) else value[0]['image_uuid']
