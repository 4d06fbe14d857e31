"""/v2/quotas/{project_id}: a project's accelerator limits and usage
(ours); an admin sets the project's own limits (PUT) or returns it to the
defaults (DELETE). Under Keystone unified limits both answer 409: the
limits are Keystone's to set."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.schemas import quotas as schema


def _one_project(remainder):
    if len([segment for segment in remainder if segment]) != 1:
        pecan.abort(404)


def _target(project_id):
    return {'project_id': project_id}


class QuotasController(rest.RestController):

    # pecan calls put and delete with whatever segments the path has (and
    # the document has no /v2/quotas for root to answer 405 from): a path
    # without exactly one project is not found, not a TypeError's 500.
    def _handle_put(self, method, remainder, request=None):
        _one_project(remainder)
        return super()._handle_put(method, remainder, request)

    def _handle_delete(self, method, remainder, request=None):
        _one_project(remainder)
        return super()._handle_delete(method, remainder, request)

    @pecan.expose('json')
    def get_one(self, project_id):
        policy.authorize('cyborg:quota:get', pecan.request.context,
                         _target(project_id))
        return {'quota': pecan.request.conductor_api.get_quota(
            pecan.request.context, project_id)}

    @pecan.expose('json')
    def put(self, project_id):
        """Merge ``{"limits": {resource class: n, -1 unlimited}}`` into
        the project's own limits; answers its quota, as GET does."""
        policy.authorize('cyborg:quota:update', pecan.request.context,
                         _target(project_id))
        validation.validate(schema.PROJECT_ID, project_id, 'project id')
        body = validation.body(pecan.request, schema.UPDATE)
        # JSON Schema counts 2.0 as an integer: stored as 2.
        limits = {rc: int(n) for rc, n in body['limits'].items()}
        return {'quota': pecan.request.conductor_api.set_quota(
            pecan.request.context, project_id, limits)}

    @pecan.expose('json')
    def delete(self, project_id):
        policy.authorize('cyborg:quota:delete', pecan.request.context,
                         _target(project_id))
        validation.validate(schema.PROJECT_ID, project_id, 'project id')
        pecan.request.conductor_api.delete_quota(pecan.request.context,
                                                 project_id)
        pecan.response.status = 204
