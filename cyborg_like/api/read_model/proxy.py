"""The conductor client the API's handlers use, with the reads of the
copied families answered from the copies (docs/design.md, "The read
model").

A list or show of a family the read model holds a current copy of is
answered from the copy, exactly as the conductor's query would answer it;
anything else (another sort key, a marker or uuid it does not hold, a
filter whose meaning depends on the database's collation, a copy not
known to be current) goes to the conductor. Which calls are reads and
which writes (and of which families) is conductor/rpc_calls.py's.
"""

from cyborg_like.api import arq_cache
from cyborg_like.api.read_model import copy
from cyborg_like.api.read_model import refresher
from cyborg_like.common import read_model as contract
from cyborg_like.common import states
from cyborg_like.conductor import rpc_calls

DEVICES = contract.DEVICES
DEPLOYABLES = contract.DEPLOYABLES
PROFILES = contract.DEVICE_PROFILES

# Conductor RPC reads that may show the end of a change of a family made
# by the conductor's own work (an operation that succeeded has programmed
# its region, a binding that ended may have): when one shows such an end
# newer than the copy, the families are served as after a write of this
# process, so what the caller reads next is never older than what it saw.
_OPERATION_ENDED = ((DEVICES, DEPLOYABLES), states.OPERATION.terminal)
_BINDING_ENDED = ((DEPLOYABLES,), (states.BOUND, states.BIND_FAILED))
ENDED_BY = {'get_operation': _OPERATION_ENDED,
            'list_operations': _OPERATION_ENDED,
            'get_arq': _BINDING_ENDED,
            'list_arqs': _BINDING_ENDED}


def _served(context, name, family):
    context.read_generation = '%s:%d' % (name, family.generation)


class ModelledConductorAPI:
    """The conductor client, with the read methods served from the copies
    when they can be."""

    def __init__(self, conductor_api, model, arqs):
        self._api = conductor_api
        self.model = model
        self.arqs = arqs

    def __getattr__(self, name):
        method = getattr(self._api, name)
        if name in ENDED_BY:
            return self._showing_ends(method, *ENDED_BY[name])
        if name in rpc_calls.READS or name in rpc_calls.LOCAL:
            return method
        # A write's families are served from the conductor until the copy
        # caught up (read-your-writes).
        families = rpc_calls.WRITES.get(name)

        def write(*args, **kwargs):
            # Any call but a read may change an ARQ: answers kept from
            # before it are not given after it.
            with self.arqs.writing():
                if not families:
                    return method(*args, **kwargs)
                with self.model.writing(families):
                    return method(*args, **kwargs)
        return write

    def get_arq(self, context, uuid):
        return self.arqs.get(context, uuid, lambda: self._conductors(
            'get_arq')(context, uuid))

    def list_arqs(self, context, filters, limit, marker, sort_key,
                  sort_dir):
        query = [filters, limit, marker, sort_key, sort_dir]
        return self.arqs.list(context, query, lambda: self._conductors(
            'list_arqs')(context, filters, limit, marker, sort_key,
                         sort_dir))

    def _conductors(self, name):
        """The conductor's read ``name``, noting the ends it shows."""
        return self._showing_ends(getattr(self._api, name), *ENDED_BY[name])

    def _showing_ends(self, method, families, ended):
        def read(*args, **kwargs):
            found = method(*args, **kwargs)
            shown = found if isinstance(found, list) else [found]
            if any(isinstance(item, dict) and item.get('state') in ended
                   and self.model.newer_than_copy(item.get('updated_at'))
                   for item in shown):
                with self.model.writing(families):
                    pass
            return found
        return read

    def _page(self, context, name, match, limit, marker, sort_key,
              sort_dir, attributes=False):
        family = self.model.family(name, attributes=attributes)
        if family is None:
            return None
        try:
            found = family.page(lambda row: match(family, row), limit,
                                marker, sort_key, sort_dir)
        except copy.Unanswerable:
            return None
        _served(context, 'attributes' if attributes else name, family)
        return found

    def _one(self, context, name, uuid, attributes=False):
        family = self.model.family(name, attributes=attributes)
        row = family.get(uuid) if family is not None else None
        if row is not None:
            _served(context, 'attributes' if attributes else name, family)
        return row

    def list_devices(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        found = self._page(context, DEVICES, copy.matching(filters), limit,
                           marker, sort_key, sort_dir)
        if found is None:
            return self._api.list_devices(context, filters, limit, marker,
                                          sort_key, sort_dir)
        return found

    def get_device(self, context, uuid):
        return self._one(context, DEVICES, uuid) or \
            self._api.get_device(context, uuid)

    def list_deployables(self, context, filters, limit, marker, sort_key,
                         sort_dir):
        found = self._page(context, DEPLOYABLES, copy.matching(filters), limit,
                           marker, sort_key, sort_dir)
        if found is None:
            return self._api.list_deployables(context, filters, limit,
                                              marker, sort_key, sort_dir)
        return found

    def get_deployable(self, context, uuid):
        return self._one(context, DEPLOYABLES, uuid) or \
            self._api.get_deployable(context, uuid)

    def list_attributes(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        # As db/attributes.py: deployable_id when given, key when not empty.
        def match(family, row):
            wanted = filters.get('deployable_id')
            if wanted is not None and row['deployable_id'] != wanted:
                return False
            return not filters.get('key') or family.equal(row['key'],
                                                          filters['key'])
        found = self._page(context, DEPLOYABLES, match, limit, marker,
                           sort_key, sort_dir, attributes=True)
        if found is None:
            return self._api.list_attributes(context, filters, limit,
                                             marker, sort_key, sort_dir)
        return found

    def get_attribute(self, context, uuid):
        return self._one(context, DEPLOYABLES, uuid, attributes=True) or \
            self._api.get_attribute(context, uuid)

    def list_device_profiles(self, context, names, limit, marker, sort_key,
                             sort_dir):
        def match(family, row):
            return not names or any(family.equal(row['name'], name)
                                    for name in names)
        found = self._page(context, PROFILES, match, limit, marker,
                           sort_key, sort_dir)
        if found is None:
            return self._api.list_device_profiles(context, names, limit,
                                                  marker, sort_key, sort_dir)
        return found

    def get_device_profile(self, context, uuid=None, name=None):
        family = self.model.family(PROFILES)
        row = None
        if family is not None:
            # An exact hit is the row any collation finds (unique column).
            row = family.get(uuid) if uuid is not None else \
                family.find('name', name)
        if row is None:
            return self._api.get_device_profile(context, uuid=uuid,
                                                name=name)
        _served(context, PROFILES, family)
        return row


def wrap(conductor_api, conf):
    """The client the API's handlers use: the read model in front of the
    conductor when ``[api] read_model`` is on and the conductors speak
    RPC 1.17; ARQ answers kept when they speak 1.20."""
    can_serve = getattr(conductor_api, 'can_serve_read_model', None)
    if not conf.api.read_model or can_serve is None or can_serve() is not True:
        return conductor_api
    model = refresher.ReadModel(conductor_api,
                                conf.api.read_model_check_interval)
    can_keep = getattr(conductor_api, 'can_keep_arq_answers', None)
    kept = conf.api.read_model_arq_answers if can_keep is not None and \
        can_keep() is True else 0
    return ModelledConductorAPI(conductor_api, model,
                                arq_cache.ArqCache(model, kept))


