"""/v2/hosts: compute hosts with an agent, up or down, with their driver
versions and drained devices (ours); driver operations below each."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.controllers.v2 import driver_operations
from cyborg_like.api.schemas import hosts as schema


class HostsController(rest.RestController):
    driver_operations = driver_operations.DriverOperationsController()

    @pecan.expose('json')
    def get_all(self, **params):
        """A page of hosts in hostname order; ``next`` when it is full
        (its marker the page's last hostname)."""
        policy.authorize('cyborg:host:get_all', pecan.request.context,
                         policy.CLOUD)
        validation.validate(schema.LIST_QUERY, params)
        limit = listing.page_size(params)
        found = pecan.request.conductor_api.list_hosts(
            pecan.request.context, limit=limit,
            marker=params.get('marker'))
        body = {'hosts': found}
        if len(found) == limit:
            body['next'] = listing.next_link('hosts', params, limit,
                                             found[-1]['hostname'])
        return body

    @pecan.expose('json')
    def get_one(self, hostname):
        policy.authorize('cyborg:host:get_one', pecan.request.context,
                         policy.CLOUD)
        return pecan.request.conductor_api.get_host(pecan.request.context,
                                                    hostname)

    @pecan.expose('json')
    def patch(self, hostname):
        """Set or remove the host's labels (``{"labels": {key: value or
        null}}``, merged into those it has)."""
        policy.authorize('cyborg:host:update', pecan.request.context,
                         policy.CLOUD)
        body = validation.body(pecan.request, schema.PATCH)
        return pecan.request.conductor_api.set_host_labels(
            pecan.request.context, hostname, body['labels'])
