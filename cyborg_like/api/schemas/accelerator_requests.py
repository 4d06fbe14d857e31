"""JSON schemas of accelerator request (ARQ) requests."""

UUID = {'type': 'string',
        'pattern': '^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$'}

CREATE = {
    'type': 'object',
    'properties': {
        'device_profile_name': {'type': 'string', 'minLength': 1,
                                'maxLength': 255},
        # openstacksdk (so the cyborgclient CLI) sends both, null when unset.
        'device_profile_group_id': {'type': ['integer', 'null'],
                                    'minimum': 0},
        'image_uuid': {'anyOf': [UUID, {'type': 'null'}]},
    },
    'required': ['device_profile_name'],
    'additionalProperties': False,
}

_BIND_PATHS = ['/hostname', '/device_rp_uuid', '/instance_uuid',
               '/project_id']

# One RFC 6902 operation on an ARQ: add (bind) or remove (unbind).
OPERATION = {
    'type': 'object',
    'properties': {
        'op': {'enum': ['add', 'remove']},
        'path': {'enum': _BIND_PATHS},
        'value': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['op', 'path'],
    'additionalProperties': False,
}

PATCH_ONE = {'type': 'array', 'minItems': 1, 'maxItems': 4,
             'items': OPERATION}

PATCH_MANY = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': 1000,
    'propertyNames': UUID,
    'additionalProperties': PATCH_ONE,
}

SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')
