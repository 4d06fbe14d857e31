"""/v2/usage: device-seconds per project, instance, resource class,
model and host over a period (ours; docs/usage.md). Counted from the
bind and unbind times the conductor records (db/usage.py), not sampled.
A member reads their project's usage; the cloud admin any project's, or
every project's when none is named."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.schemas import usage as schema


class UsageController(rest.RestController):

    @pecan.expose('json')
    def get_all(self, **params):
        context = pecan.request.context
        project_id = params.get('project_id')
        # Another project's usage is the admin's to read (403, as quotas).
        policy.authorize('cyborg:usage:get', context,
                         {'project_id': project_id or context.project_id})
        validation.validate(schema.QUERY, params)
        return pecan.request.conductor_api.get_usage(
            context, params.get('start'), end=params.get('end'),
            group_by=schema.group_by(params.get('group_by')),
            project_id=project_id)
