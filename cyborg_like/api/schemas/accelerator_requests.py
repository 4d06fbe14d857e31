"""JSON schemas of accelerator request (ARQ) requests."""

from cyborg_like.api import validation

# Patterns end in \Z: "$" would also match before a trailing newline.
UUID = {'type': 'string',
        'pattern': r'^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}\Z'}

# Bind values are stored and compared as Nova and Placement write them.
CANONICAL_UUID = {'type': 'string', 'pattern': validation.UUID_PATTERN}

# A host name as RFC 1123 allows it: dot-separated labels of letters,
# digits and inner hyphens, at most 63 characters each, 255 in all.
_LABEL = r'[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
HOSTNAME = {'type': 'string', 'maxLength': 255,
            'pattern': r'^%s(\.%s)*\Z' % (_LABEL, _LABEL)}

# A Keystone project id (32 hex digits, or an id of an external identity
# backend): printable, without spaces.
PROJECT_ID = {'type': 'string', 'pattern': r'^[A-Za-z0-9._-]{1,64}\Z'}

CREATE = {
    'type': 'object',
    'properties': {
        # Empty is allowed: no profile has that name (404, as Cyborg).
        'device_profile_name': validation.text(min_length=0),
        # openstacksdk (so the cyborgclient CLI) sends both, null when unset.
        'device_profile_group_id': {'type': ['integer', 'null'],
                                    'minimum': 0, 'maximum': 1000},
        'image_uuid': {'anyOf': [UUID, {'type': 'null'}]},
    },
    'required': ['device_profile_name'],
    'additionalProperties': False,
}

_BIND_PATHS = ['/hostname', '/device_rp_uuid', '/instance_uuid',
               '/project_id']

_VALUE_BY_PATH = {'/hostname': HOSTNAME, '/device_rp_uuid': CANONICAL_UUID,
                  '/instance_uuid': CANONICAL_UUID,
                  '/project_id': PROJECT_ID}


def _typed_value(path):
    return {'if': {'properties': {'path': {'const': path}},
                   'required': ['path']},
            'then': {'properties': {'value': _VALUE_BY_PATH[path]}}}


# An add carries its value (RFC 6902): later ops win, so an add without
# one would undo an earlier op's value.
_ADD_HAS_VALUE = {'if': {'properties': {'op': {'const': 'add'}},
                         'required': ['op']},
                  'then': {'required': ['value']}}

# One RFC 6902 operation on an ARQ: add (bind) or remove (unbind); the
# value's type depends on the path.
OPERATION = {
    'type': 'object',
    'properties': {
        'op': {'enum': ['add', 'remove']},
        'path': {'enum': _BIND_PATHS},
        'value': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['op', 'path'],
    'additionalProperties': False,
    'allOf': [_typed_value(path) for path in _BIND_PATHS] + [
        _ADD_HAS_VALUE],
}

# The ops of one ARQ, each well formed.
PATCH_ONE_SHAPE = {'type': 'array', 'minItems': 1, 'maxItems': 4,
                   'items': OPERATION}

PATCH_MANY_SHAPE = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': 1000,
    'propertyNames': UUID,
    'additionalProperties': PATCH_ONE_SHAPE,
}


def _adds(path):
    return {'contains': {'properties': {'op': {'const': 'add'},
                                        'path': {'const': path}},
                         'required': ['op', 'path', 'value']}}


# Binding ops: all add, naming the three fields of a bind (project_id
# may come too).
BIND = {'items': {'properties': {'op': {'const': 'add'}}},
        'allOf': [_adds(path) for path in _BIND_PATHS[:3]]}
# Unbinding ops: all remove.
UNBIND = {'items': {'properties': {'op': {'const': 'remove'}}}}

# What the API takes: one ARQ's ops bind or unbind it ...
PATCH_ONE = dict(PATCH_ONE_SHAPE, anyOf=[BIND, UNBIND])
# ... and one request binds every ARQ it names or unbinds every one.
PATCH_MANY = dict(PATCH_MANY_SHAPE, anyOf=[
    {'additionalProperties': BIND}, {'additionalProperties': UNBIND}])

# What ?device_health= may ask for: the health of the device an ARQ holds.
DEVICE_HEALTH = ('healthy', 'unhealthy', 'unknown')

SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')

# POST /v2/accelerator_requests/<uuid>/schedule (ours): bind without Nova,
# the conductor picking the deployable (docs/scheduling.md).
SCHEDULE_STRATEGIES = ('pack', 'spread')
SCHEDULE = {
    'type': 'object',
    'properties': {
        # The consumer: an instance, an Ironic node's instance, a job id.
        'instance_uuid': CANONICAL_UUID,
        'hostname': HOSTNAME,
        'preferences': {
            'type': 'object',
            'properties': {
                'strategy': {'enum': list(SCHEDULE_STRATEGIES)},
                'numa_node': {'type': 'integer', 'minimum': 0,
                              'maximum': 1023},
            },
            'additionalProperties': False,
        },
    },
    'required': ['instance_uuid'],
    'additionalProperties': False,
}
