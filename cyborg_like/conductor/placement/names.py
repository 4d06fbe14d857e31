"""Traits and resource classes Placement knows; custom ones are created."""

import re

from oslo_log import log as logging

from cyborg_like.conductor.placement import desired

LOG = logging.getLogger(__name__)

_NAME_OK = re.compile(r'^[A-Z0-9_]+\Z')


class KnownNames:
    """Traits and resource classes Placement has; creates custom ones.

    Remembered for the life of the process, so a sync in line costs no
    request for them.
    """

    def __init__(self, client):
        self.client = client
        self.traits = set()
        self.resource_classes = set()

    def filter(self, providers):
        """Drop from ``providers`` the names Placement cannot take.

        The owner trait is made sure of even with no providers: listing
        providers ``required`` to have it fails while it does not exist.
        """
        self._learn_traits(set().union({desired.OWNER_TRAIT},
                                       *(p['traits'] for p in providers)))
        for provider in providers:
            provider['traits'] &= self.traits
            for rc in list(provider['inventories']):
                if not self._resource_class(rc):
                    del provider['inventories'][rc]

    def _learn_traits(self, names):
        unknown = names - self.traits
        custom = {n for n in unknown if n.startswith('CUSTOM_')
                  and _NAME_OK.match(n)}
        for name in sorted(custom):
            if self.client.create_trait(name):
                self.traits.add(name)
        standard = {n for n in unknown - custom
                    if _NAME_OK.match(n) and not n.startswith('CUSTOM_')}
        if standard:
            self.traits |= self.client.existing_traits(standard)
        for name in sorted(unknown - self.traits):
            LOG.warning('Trait %r is not in Placement and cannot be created '
                        '(custom traits are CUSTOM_ and A-Z, 0-9, _); '
                        'leaving it out', name)

    def _resource_class(self, name):
        if name in self.resource_classes:
            return True
        if not _NAME_OK.match(name):
            known = False
        elif name.startswith('CUSTOM_'):
            known = self.client.create_resource_class(name)
        else:
            known = self.client.resource_class_exists(name)
        if known:
            self.resource_classes.add(name)
        else:
            LOG.warning('Resource class %r is not in Placement and cannot '
                        'be created (custom ones are CUSTOM_ and A-Z, 0-9, '
                        '_); its inventory is left out', name)
        return known
