"""JSON schemas of rollout requests (ours; docs/rollouts.md)."""

from cyborg_like.api import validation
from cyborg_like.api.schemas import hosts
from cyborg_like.common import driver_vars

# A count, or a percentage of the targets ("10%").
_SIZE = {'oneOf': [
    {'type': 'integer', 'minimum': 0, 'maximum': 1000000},
    {'type': 'string', 'pattern': r'^(100|[1-9]?[0-9])(\.[0-9]+)?%\Z'}]}
_HOSTNAME = {'type': 'string', 'pattern': r'^[A-Za-z0-9._-]{1,255}\Z'}

SELECTOR = {
    'type': 'object',
    'properties': {
        'hostnames': {'type': 'array', 'items': _HOSTNAME, 'minItems': 1,
                      'maxItems': 10000, 'uniqueItems': True},
        # Placement aggregates: targets on a host in any of them (as the
        # Placement sync last read the host's; docs/rollouts.md).
        'aggregates': {'type': 'array',
                       'items': {'type': 'string',
                                 'pattern': validation.UUID_PATTERN},
                       'minItems': 1, 'maxItems': 100, 'uniqueItems': True},
        # The operators' host labels: targets on a host with all of them.
        'labels': hosts.labels(),
        'vendor': validation.text(),
        'model': validation.text(),
        'deployable_names': {'type': 'array', 'items': validation.text(),
                             'minItems': 1, 'maxItems': 100,
                             'uniqueItems': True},
        # What the regions hold now (null: nothing).
        'current_image': {'oneOf': [validation.text(36), {'type': 'null'}]},
        # Driver rollouts (hosts): a device of this type on the host, and
        # the family's version the host has now (null: none).
        'device_type': {'enum': ['GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC',
                                 'SSD']},
        'current_version': {'oneOf': [driver_vars.VERSION,
                                      {'type': 'null'}]},
    },
    'additionalProperties': False,
}

STRATEGY = {
    'type': 'object',
    'properties': {
        'canary': _SIZE,
        'waves': {'type': 'array', 'items': _SIZE, 'minItems': 1,
                  'maxItems': 100},
        'max_unavailable': _SIZE,
        'max_unavailable_per_host': {'type': 'integer', 'minimum': 1,
                                     'maximum': 10000},
        'gate_seconds': {'type': 'integer', 'minimum': 0,
                         'maximum': 86400},
        'failure_budget': {'type': 'integer', 'minimum': 0,
                           'maximum': 1000000},
        # include: driver rollouts only (forced driver operations);
        # programming and flashing refuse a region or card in use.
        'workloads': {'enum': ['skip', 'wait', 'include']},
        'wait_timeout': {'type': 'integer', 'minimum': 0,
                         'maximum': 604800},
    },
    'additionalProperties': False,
}

CREATE = {
    'type': 'object',
    'properties': {
        'name': validation.text(),
        # bitstream: to FPGA regions, a catalog image's uuid or an id the
        # agents' bitstream_dir holds; firmware: to FPGA cards, a catalog
        # firmware image's uuid.
        # driver: to hosts, a driver family (`driver`) at `version`,
        # through driver operations (docs/drivers-lifecycle.md).
        'kind': {'enum': ['bitstream', 'firmware', 'driver']},
        'image': validation.text(36),
        'driver': {'enum': list(driver_vars.FAMILIES)},
        'version': driver_vars.VERSION,
        # Driver rollouts: the family's parameters for each host's install
        # or upgrade (DRIVER_PARAMETERS; version is the rollout's), and the
        # time each host's playbook may take.
        'parameters': {'type': 'object', 'maxProperties': 32,
                       'not': {'required': ['version']}},
        'timeout': {'type': 'integer', 'minimum': 1, 'maximum': 86400},
        'selector': SELECTOR,
        'strategy': STRATEGY,
        'dry_run': {'type': 'boolean'},
    },
    'required': ['kind'],
    'if': {'properties': {'kind': {'const': 'driver'}}},
    'then': {'required': ['driver', 'version'],
             'not': {'required': ['image']}},
    'else': {'required': ['image'],
             'not': {'anyOf': [{'required': [name]} for name in (
                 'driver', 'version', 'parameters', 'timeout')]}},
    'additionalProperties': False,
}


def driver_parameters(body):
    """The schema a driver rollout's ``parameters`` (with its version)
    must meet: the family's for an install (an upgrade takes the same).
    """
    return driver_vars.schema(body['driver'], driver_vars.INSTALL)


def driver_parameters_value(body):
    return dict(body.get('parameters') or {}, version=body['version'])

STATES = ['running', 'paused', 'succeeded', 'rolling_back', 'failed',
          'aborted', 'manual_rollback', 'rolled_back']
FILTERS = ('state', 'kind')
FILTER_SCHEMAS = {'state': {'enum': STATES},
                  'kind': {'enum': ['bitstream', 'firmware', 'driver']}}
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')

TARGET_STATES = ['pending', 'skipped_busy', 'in_progress', 'gating', 'done',
                 'unverified', 'failed', 'rolling_back', 'rolled_back']
TARGETS_QUERY = {
    'type': 'object',
    'properties': {
        'state': {'enum': TARGET_STATES},
        'wave': {'type': 'string', 'pattern': r'^[0-9]{1,7}\Z'},
        'hostname': _HOSTNAME,
        'limit': {'type': 'string', 'pattern': r'^[1-9][0-9]{0,8}\Z'},
        # The id of the last target of the previous page.
        'marker': {'type': 'string', 'pattern': r'^[1-9][0-9]{0,11}\Z'},
    },
    'additionalProperties': False,
}

NO_QUERY = {'type': 'object', 'additionalProperties': False}
