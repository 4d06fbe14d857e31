"""JSON schemas of attribute requests."""

CREATE = {
    'type': 'object',
    'properties': {
        'deployable_id': {'type': 'integer', 'minimum': 1},
        'key': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'value': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['deployable_id', 'key', 'value'],
    'additionalProperties': False,
}

LIST_FILTERS = ('deployable_id', 'key')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'key')
