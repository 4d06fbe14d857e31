"""JSON schemas of device profile requests."""

# Resource classes a group may ask for, as Cyborg accepts them.
STANDARD_RCS = ('FPGA', 'GPU', 'VGPU', 'PGPU', 'QAT', 'NIC', 'SSD')
ACCEL_PROPERTIES = ('bitstream_id', 'bitstream_name', 'function_id',
                    'function_name', 'is_sriov', 'vendor', 'product_id')

GROUP = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        r'^resources:(%s|CUSTOM_[A-Z0-9_]+)$' % '|'.join(STANDARD_RCS): {
            'type': 'string', 'pattern': '^[1-9][0-9]{0,3}$'},
        r'^trait:[A-Z][A-Z0-9_]{0,254}$': {
            'enum': ['required', 'forbidden']},
        r'^accel:(%s)$' % '|'.join(ACCEL_PROPERTIES): {
            'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'additionalProperties': False,
}

PROFILE = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'pattern': '^[a-zA-Z0-9-_]{1,255}$'},
        'description': {'type': ['string', 'null'], 'maxLength': 255},
        'groups': {'type': 'array', 'minItems': 1, 'maxItems': 64,
                   'items': GROUP},
        # Accepted and ignored, as Cyborg does for older clients.
        'uuid': {'type': 'string'},
    },
    'required': ['name', 'groups'],
    'additionalProperties': False,
}

# Cyborg takes a list holding exactly one profile; a bare object is fine.
CREATE = {
    'oneOf': [PROFILE,
              {'type': 'array', 'minItems': 1, 'maxItems': 1,
               'items': PROFILE}],
}

LIST_FILTERS = ('name',)
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'name')
