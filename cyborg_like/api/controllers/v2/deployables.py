"""/v2/deployables: what can be handed out (FPGA regions, GPUs, slices)."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.controllers.v2 import operations
from cyborg_like.api.schemas import deployables as schema
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
    _custom_actions = {'program': ['PATCH']}

    def _handle_patch(self, method, remainder, request=None):
        # pecan routes only GET/POST/PUT/DELETE to custom actions itself.
        match = self._handle_custom_action(method, remainder, request)
        if match:
            return match
        pecan.abort(405)

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:deployable:get_all', pecan.request.context,
                         policy.CLOUD)
        query = listing.ListQuery(params, fields.DEPLOYABLE_FILTERS,
                                  fields.DEPLOYABLE_SORT_KEYS)
        deployables = pecan.request.conductor_api.list_deployables(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, deployables, _view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:deployable:get_one', pecan.request.context,
                         policy.CLOUD)
        return _view(pecan.request.conductor_api.get_deployable(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def program(self, uuid):
        """Start programming a region; 202 and the operation to poll.

        The body is Cyborg's; the bitstream id names a file in the host's
        [agent] bitstream_dir.
        """
        policy.authorize('cyborg:deployable:program', pecan.request.context,
                         policy.CLOUD)
        body = validation.body(pecan.request, schema.PROGRAM)
        started = pecan.request.conductor_api.program_deployable(
            pecan.request.context, uuid, schema.bitstream_id(body))
        operation = operations.view(started['operation'])
        pecan.response.status = 202
        pecan.response.headers['Location'] = operation['links'][0]['href']
        return dict(_view(started['deployable']), operation=operation)
