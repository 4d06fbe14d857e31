"""/v2/operations: long work a client polls (ours; Cyborg has none)."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing

RESOURCE = 'operations'
FILTERS = ('target_uuid', 'state', 'type')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')


def view(operation):
    return dict(operation, links=listing.self_link(RESOURCE,
                                                   operation['uuid']))


class OperationsController(rest.RestController):
    _custom_actions = {'cancel': ['POST']}

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:operation:get', pecan.request.context)
        query = listing.ListQuery(params, FILTERS, SORT_KEYS)
        found = pecan.request.conductor_api.list_operations(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, found, view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:operation:get', pecan.request.context)
        return view(pecan.request.conductor_api.get_operation(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def cancel(self, uuid):
        """Cancel a driver operation: 202 and the operation, cancelling
        until its agent stopped the playbook (then cancelled)."""
        policy.authorize('cyborg:operation:cancel', pecan.request.context,
                         policy.CLOUD)
        validation.validate({'type': 'object', 'additionalProperties': False},
                            dict(pecan.request.GET))
        pecan.response.status = 202
        return view(pecan.request.conductor_api.cancel_operation(
            pecan.request.context, uuid))
