"""What Placement should show of a deployable: pure functions of the
database's facts (db/placement_sync.py ``host_deployables``)."""

import re

OWNER_TRAIT = 'CUSTOM_CYBORG_LIKE_MANAGED'
# Placement's limit on provider names.
MAX_NAME = 200
ENABLED, DRAINED, FPGA = 'enabled', 'drained', 'FPGA'
# The attribute naming a deployable's resource class.
RC_KEY = 'rc'

_NOT_NAME = re.compile(r'[^A-Z0-9_]')


def custom_name(prefix, value):
    return prefix + _NOT_NAME.sub('_', str(value).upper())


def provider_name(deployable):
    name = '%s_%s_%s' % (deployable['hostname'], deployable['device_uuid'],
                         deployable['name'])
    return name if len(name) <= MAX_NAME else deployable['device_uuid']


def wanted_traits(deployable):
    traits = {OWNER_TRAIT,
              custom_name('CUSTOM_VENDOR_', deployable['vendor']),
              custom_name('CUSTOM_MODEL_', deployable['model'])}
    traits.update(value for key, value in deployable['attributes'].items()
                  if key.startswith('trait'))
    if deployable['device_type'] == FPGA:
        traits.add(custom_name('CUSTOM_REGION_', deployable['name']))
    if deployable['bitstream_id']:
        traits.add(custom_name('CUSTOM_BITSTREAM_',
                               deployable['bitstream_id']))
    return traits


def wanted_inventory(deployable):
    resource_class = deployable['attributes'].get(RC_KEY)
    total = deployable['num_accelerators']
    if not resource_class or total < 1:
        return {}
    usable = (deployable['status'] == ENABLED
              and deployable['service_state'] != DRAINED
              and not deployable.get('drained')
              # In a window of a lease (db/leases.py): Nova must not
              # place anyone there; its lessee binds standalone.
              and not deployable.get('leased'))
    return {resource_class: {
        'total': total, 'reserved': 0 if usable else total,
        'min_unit': 1, 'max_unit': total, 'step_size': 1,
        'allocation_ratio': 1.0}}


def wanted_provider(deployable):
    return {'uuid': deployable['rp_uuid'],
            'name': provider_name(deployable),
            'inventories': wanted_inventory(deployable),
            'traits': wanted_traits(deployable)}
