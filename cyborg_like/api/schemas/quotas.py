"""JSON schemas of quota requests (ours): a project's own limits."""

from cyborg_like.api import validation
from cyborg_like.api.schemas import device_profiles

# The classes a device profile may ask for, as [quota] default_limits
# names them ("FPGA", "CUSTOM_MIG_1G_10GB").
RESOURCE_CLASS = {
    'type': 'string',
    'pattern': r'^(%s|CUSTOM_[A-Z0-9_]{1,247})\Z' % '|'.join(
        device_profiles.STANDARD_RCS)}
# -1: unlimited (as Keystone's unified limits); the database column is a
# 32-bit integer.
LIMIT = {'type': 'integer', 'minimum': -1, 'maximum': 2 ** 31 - 1}

PROJECT_ID = validation.text(255)

# PUT /v2/quotas/{project_id}: merged into the project's own limits.
UPDATE = {
    'type': 'object',
    'properties': {
        'limits': {'type': 'object', 'minProperties': 1,
                   'maxProperties': 64, 'propertyNames': RESOURCE_CLASS,
                   'additionalProperties': LIMIT},
    },
    'required': ['limits'],
    'additionalProperties': False,
}
