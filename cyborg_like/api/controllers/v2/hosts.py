"""/v2/hosts: compute hosts with an agent, up or down (ours)."""

import pecan
from pecan import rest


class HostsController(rest.RestController):

    @pecan.expose('json')
    def get_all(self):
        return {'hosts': pecan.request.conductor_api.list_hosts(
            pecan.request.context)}
