"""/v2/hosts: compute hosts with an agent, up or down (ours)."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation


class HostsController(rest.RestController):

    @pecan.expose('json')
    def get_all(self):
        policy.authorize('cyborg:host:get_all', pecan.request.context)
        validation.validate({'type': 'object', 'additionalProperties': False},
                            dict(pecan.request.GET))
        return {'hosts': pecan.request.conductor_api.list_hosts(
            pecan.request.context)}
