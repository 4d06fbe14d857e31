"""/v2/deployables: what can be handed out (FPGA regions, GPUs, slices)."""

import pecan
from pecan import rest

from cyborg_like.api.controllers import listing
from cyborg_like.common import listing as fields

RESOURCE = 'deployables'
_FIELDS = ('uuid', 'parent_id', 'root_id', 'name', 'num_accelerators',
           'device_id', 'attributes_list', 'rp_uuid', 'driver_name',
           'bitstream_id', 'created_at', 'updated_at')


def _view(deployable):
    shown = {k: deployable[k] for k in _FIELDS}
    shown['links'] = listing.self_link(RESOURCE, deployable['uuid'])
    return shown


class DeployablesController(rest.RestController):

    @pecan.expose('json')
    def get_all(self, **params):
        query = listing.ListQuery(params, fields.DEPLOYABLE_FILTERS,
                                  fields.DEPLOYABLE_SORT_KEYS)
        deployables = pecan.request.conductor_api.list_deployables(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, deployables, _view)

    @pecan.expose('json')
    def get_one(self, uuid):
        return _view(pecan.request.conductor_api.get_deployable(
            pecan.request.context, uuid))
