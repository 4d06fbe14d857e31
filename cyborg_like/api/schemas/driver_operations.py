"""JSON schema of driver operation requests (POST
/v2/hosts/{hostname}/driver_operations).

The family's own parameters (package, repository, vGPU manager...) are
checked against common/driver_vars.py's schema for the family and action
once this one passed: ``version`` joins them there."""

from cyborg_like.common import driver_vars

SECONDS = {'type': 'integer', 'minimum': 1, 'maximum': 86400}

# What the controller checks first (then family_schema): one message that
# names the wrong field.
SHAPE = {
    'type': 'object',
    'properties': {
        'action': {'enum': list(driver_vars.ACTIONS)},
        'family': {'enum': list(driver_vars.FAMILIES)},
        'version': driver_vars.VERSION,
        'parameters': {'type': 'object', 'maxProperties': 32,
                       'not': {'required': ['version']}},
        'force': {'type': 'boolean'},
        'wait_for_release': SECONDS,
        'timeout': SECONDS,
    },
    'required': ['action', 'family'],
    'additionalProperties': False,
}


def family_parameters(body):
    """The parameters the playbook gets, version included."""
    parameters = dict(body.get('parameters') or {})
    if 'version' in body:
        parameters['version'] = body['version']
    return parameters


def family_schema(body):
    return driver_vars.schema(body['family'], body['action'])


def _variant(family, action):
    """The request for ``action`` on ``family``, whole: SHAPE and the
    family's parameters in one schema (as the OpenAPI document shows it)."""
    family_params = driver_vars.schema(family, action)
    parameters = {k: v for k, v in family_params.items()
                  if k not in ('required',)}
    parameters['properties'] = {
        k: v for k, v in family_params['properties'].items()
        if k != 'version'}
    properties = {'action': {'const': action}, 'family': {'const': family},
                  'parameters': parameters, 'force': {'type': 'boolean'},
                  'wait_for_release': SECONDS, 'timeout': SECONDS}
    if 'version' in family_params['properties']:
        properties['version'] = driver_vars.VERSION
    required = ['action', 'family'] + list(family_params.get('required', []))
    return {'type': 'object', 'properties': properties,
            'required': required, 'additionalProperties': False}


# Exactly what SHAPE followed by family_schema accepts: the documented
# request body (tests/functional/test_openapi.py holds the two equal).
CREATE = {'oneOf': [_variant(family, action)
                    for family in driver_vars.FAMILIES
                    for action in driver_vars.ACTIONS]}
