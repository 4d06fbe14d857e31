"""JSON schemas of device profile requests.

Patterns end in ``\\Z``: ``$`` would also match before a trailing newline.
"""

import re

import os_traits

from cyborg_like.api import validation
from cyborg_like.api.schemas import accelerator_requests as arq_schema

# Resource classes a group may ask for, as Cyborg accepts them.
STANDARD_RCS = ('FPGA', 'GPU', 'VGPU', 'PGPU', 'QAT', 'NIC', 'SSD')
ACCEL_PROPERTIES = ('bitstream_id', 'bitstream_name', 'function_id',
                    'function_name', 'is_sriov', 'vendor', 'product_id',
                    # Ours: narrows accel:function_name (the catalog).
                    'function_version')
# Prefixes whose names Cyborg strips of surrounding spaces
# ("resources: FPGA" is "resources:FPGA").
STRIPPED_PREFIXES = ('resources:', 'trait:')
# The most accelerators one group may ask for; [api]
# max_accelerators_per_request bounds the sum over the groups.
MAX_PER_GROUP = 999

# The traits Placement can know: CUSTOM_* or a standard trait of
# os-traits, spelled out so that the schema (and the OpenAPI document
# made from it) says which a group may name. A new os-traits release
# changes this pattern: cyborg_like/api/openapi.yaml must follow
# (tests/functional/test_openapi.py compares them).
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
TRAIT_KEY_PATTERN = r'^trait:(CUSTOM_[A-Z0-9_]{1,248}|%s)\Z' % '|'.join(
    sorted(_STANDARD_TRAITS))
# What a trait key looks like, known or not.
_TRAIT_KEY_SHAPE = re.compile(r'trait:[A-Z][A-Z0-9_]{0,254}')

GROUP = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        r'^resources:(%s|CUSTOM_[A-Z0-9_]{1,247})\Z' % '|'.join(
            STANDARD_RCS): {
            'type': 'string', 'pattern': r'^[1-9][0-9]{0,2}\Z'},
        TRAIT_KEY_PATTERN: {'enum': ['required', 'forbidden']},
        r'^accel:(%s)\Z' % '|'.join(ACCEL_PROPERTIES): validation.text(),
    },
    'additionalProperties': False,
}

PROFILE = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'pattern': r'^[a-zA-Z0-9-_]{1,255}\Z'},
        'description': dict(validation.text(min_length=0),
                            type=['string', 'null']),
        'groups': {'type': 'array', 'minItems': 1, 'maxItems': 64,
                   'items': GROUP},
        # Kept, as Cyborg keeps it (a duplicate is 409); empty or null
        # (what older clients send) makes a new one.
        'uuid': {'anyOf': [arq_schema.UUID,
                           {'type': 'string', 'maxLength': 0},
                           {'type': 'null'}]},
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

def normalized_key(key):
    """``key`` with the spaces around its name stripped, as Cyborg does."""
    for prefix in STRIPPED_PREFIXES:
        if key.startswith(prefix):
            return prefix + key[len(prefix):].strip(' ')
    return key


def is_unknown_trait(key):
    """``key`` names a trait Placement cannot know: neither CUSTOM_ nor a
    standard trait of os-traits. No host could ever satisfy it. (The
    schema refuses it too; this is for a clearer error.)"""
    return bool(_TRAIT_KEY_SHAPE.fullmatch(key)) and not _is_placement_trait(
        key.split(':', 1)[1])


def _is_placement_trait(name):
    return (name.startswith('CUSTOM_') and len(name) > len('CUSTOM_')
            or name in _STANDARD_TRAITS)


def accelerator_count(groups):
    """The accelerators a profile's groups ask for, all told."""
    return sum(int(count) for group in groups
               for key, count in group.items()
               if key.startswith('resources:'))
