"""Bringing one host's resource providers in line with its deployables."""

import operator
import re

from oslo_log import log as logging

from cyborg_like.conductor.placement import client as rest
from cyborg_like.conductor.placement import desired

LOG = logging.getLogger(__name__)

# Tries of a generation-checked write before leaving it to the next sync.
GENERATION_RETRIES = 4
INVENTORY_INUSE = 'placement.inventory.inuse'

_UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'


class HostSync:
    """One sync of one host; ``run()`` says whether it is in line now."""

    def __init__(self, client, names, hostname):
        self.client = client
        self.names = names
        self.hostname = hostname

    def run(self, deployables, compute_node):
        wanted = {p['uuid']: p
                  for p in map(desired.wanted_provider, deployables)}
        self.names.filter(wanted.values())
        tree = {p['uuid']: p for p in self.client.providers(
            in_tree=compute_node['uuid'])}
        ours = {p['uuid'] for p in self.client.providers(
            in_tree=compute_node['uuid'], required=desired.OWNER_TRAIT)}
        mine = re.compile('^%s_%s_' % (re.escape(self.hostname), _UUID))
        ours.update(uuid for uuid, p in tree.items()
                    if p['parent_provider_uuid'] == compute_node['uuid']
                    and mine.match(p['name']))
        # Every provider is tried, whatever happened to the ones before:
        # the lists are built in full before their results are looked at.
        removed = [self._remove(tree[uuid])
                   for uuid in sorted(ours - set(wanted))]
        applied = [self._apply(compute_node, tree.get(uuid), provider)
                   for uuid, provider in wanted.items()]
        return all(removed) and all(applied)

    def _remove(self, provider):
        response = self.client.delete_provider(provider['uuid'])
        if response.status_code in (204, 404):
            LOG.info('Removed resource provider %s (%s) from Placement',
                     provider['uuid'], provider['name'])
            return True
        LOG.warning('Placement keeps resource provider %s (%s) of host %s '
                    'for now (%s); will retry at the next sync',
                    provider['uuid'], provider['name'], self.hostname,
                    rest.describe(response))
        return False

    def _apply(self, compute_node, current, wanted):
        uuid = wanted['uuid']
        parent = compute_node['uuid']
        if current is None:
            current = self._create(wanted, parent)
            if current is None:
                return False
        if current['parent_provider_uuid'] != parent:
            # Left under another provider (an old compute node record);
            # re-parenting needs 1.37, deleting and creating works always.
            LOG.warning('Resource provider %s is under %s, not under compute '
                        'node %s; re-creating it', uuid,
                        current['parent_provider_uuid'], parent)
            if not self._remove(current):
                return False
            current = self._create(wanted, parent)
            if current is None:
                return False
        if current['name'] != wanted['name']:
            response = self.client.update_provider(uuid, wanted['name'],
                                                   parent)
            if response.status_code != 200:
                LOG.error('Could not rename resource provider %s to %s: %s',
                          uuid, wanted['name'], rest.describe(response))
                return False
        # The traits are written even when the inventory is refused (an
        # inventory in use cannot shrink; the traits still can change).
        inventory_ok = self._converge(
            uuid, 'inventory', self.client.inventories,
            self.client.set_inventories, wanted['inventories'],
            _same_inventories)
        traits_ok = self._converge(
            uuid, 'traits', self.client.traits, self.client.set_traits,
            wanted['traits'], operator.eq)
        return inventory_ok and traits_ok

    def _create(self, wanted, parent):
        response = self.client.create_provider(wanted['uuid'],
                                               wanted['name'], parent)
        if response.status_code == 200:
            LOG.info('Created resource provider %s (%s) in Placement',
                     wanted['uuid'], wanted['name'])
            return response.json()
        # 409: another conductor created it meanwhile, or the name is taken.
        existing = self.client.provider(wanted['uuid'])
        if existing is None:
            LOG.error('Could not create resource provider %s (%s) for host '
                      '%s: %s', wanted['uuid'], wanted['name'],
                      self.hostname, rest.describe(response))
        return existing

    def _converge(self, uuid, what, read, write, wanted, same):
        """Write ``wanted`` unless it is there; re-read on conflicts."""
        for attempt in range(1, GENERATION_RETRIES + 1):
            generation, current = read(uuid)
            if same(current, wanted):
                return True
            response = write(uuid, generation, wanted)
            if response.status_code == 200:
                return True
            code = rest.error_code(response)
            if response.status_code != 409 or code == INVENTORY_INUSE:
                LOG.warning('Placement refused the %s of resource provider '
                            '%s (host %s): %s; will retry at the next sync',
                            what, uuid, self.hostname, rest.describe(response))
                return False
            LOG.info('Resource provider %s changed while its %s was '
                     'written (generation %s, attempt %s of %s); re-reading',
                     uuid, what, generation, attempt, GENERATION_RETRIES)
        LOG.warning('Resource provider %s kept changing while its %s was '
                    'written; will retry at the next sync', uuid, what)
        return False


def _same_inventories(current, wanted):
    if set(current) != set(wanted):
        return False
    return all(current[rc].get(field) == value
               for rc, fields in wanted.items()
               for field, value in fields.items())
