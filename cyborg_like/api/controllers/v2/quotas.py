"""/v2/quotas/{project_id}: a project's accelerator limits and usage
(ours)."""

import pecan
from pecan import rest

from cyborg_like.api import policy


class QuotasController(rest.RestController):

    @pecan.expose('json')
    def get_one(self, project_id):
        policy.authorize('cyborg:quota:get', pecan.request.context,
                         {'project_id': project_id})
        return {'quota': pecan.request.conductor_api.get_quota(
            pecan.request.context, project_id)}
