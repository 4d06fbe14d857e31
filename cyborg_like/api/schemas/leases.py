"""JSON schemas of lease requests (ours; docs/leases.md)."""

from cyborg_like.api import validation

# A resource class or trait name as Placement spells them.
_NAME = {'type': 'string', 'pattern': r'^[A-Z0-9_]{1,255}\Z'}

# A local date and time, without a UTC offset: the lease's time zone
# gives it.
LOCAL_TIME = {
    'type': 'string',
    'pattern': r'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}'
               r'(:[0-9]{2})?\Z'}

_BY_DEVICES = {'required': ['devices'],
               'not': {'anyOf': [{'required': ['resource_class']},
                                 {'required': ['count']},
                                 {'required': ['traits']}]}}
_BY_PROFILE = {'required': ['resource_class', 'count'],
               'not': {'required': ['devices']}}

CREATE = {
    'type': 'object',
    'properties': {
        'name': validation.text(),
        'resource_class': _NAME,
        'traits': {
            'type': 'object', 'maxProperties': 32,
            'propertyNames': _NAME,
            'additionalProperties': {'enum': ['required', 'forbidden']}},
        'count': {'type': 'integer', 'minimum': 1, 'maximum': 1000},
        'devices': {
            'type': 'array', 'minItems': 1, 'maxItems': 1000,
            'uniqueItems': True,
            'items': {'type': 'string',
                      'pattern': validation.UUID_PATTERN}},
        'start': LOCAL_TIME,
        'end': LOCAL_TIME,
        'timezone': {'type': 'string',
                     'pattern': r'^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+){0,2}\Z',
                     'maxLength': 64},
        'recurrence': {'type': 'string', 'maxLength': 1000,
                       'pattern': r'^(RRULE:)?[A-Z]+=[A-Za-z0-9,+-]+'
                                  r'(;[A-Z]+=[A-Za-z0-9,+-]+)*\Z'},
    },
    'required': ['start', 'end', 'timezone'],
    'oneOf': [_BY_DEVICES, _BY_PROFILE],
    'additionalProperties': False,
}

FILTERS = ('state', 'project_id')
FILTER_SCHEMAS = {'state': {'enum': ['active', 'returned', 'revoked',
                                     'expired']},
                  'project_id': {'type': 'string',
                                 'pattern': r'^[A-Za-z0-9._-]{1,64}\Z'}}
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')
