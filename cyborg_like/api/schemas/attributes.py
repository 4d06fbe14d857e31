"""JSON schemas of attribute requests."""

from cyborg_like.api import validation

CREATE = {
    'type': 'object',
    'properties': {
        # Ids are 64-bit integers in every database.
        'deployable_id': {'type': 'integer', 'minimum': 1,
                          'maximum': validation.MAX_INT},
        'key': validation.text(),
        'value': validation.text(),
    },
    'required': ['deployable_id', 'key', 'value'],
    'additionalProperties': False,
}

LIST_FILTERS = ('deployable_id', 'key')
# A deployable's integer id, in digits that fit in 64 bits.
FILTER_SCHEMAS = {'deployable_id': dict(validation.text(),
                                        pattern=r'^[0-9]{1,18}\Z')}
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'key')
