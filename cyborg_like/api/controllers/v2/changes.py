"""/v2/changes: the change log (ours): who changed what, under which
request id. One record per committed write of an API request
(db/changes.py); a client answered 503 for a write asks it by request id
whether the write was carried out after all."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api.controllers import listing

RESOURCE = 'changes'
FILTERS = ('request_id', 'method', 'target', 'project_id')
SORT_KEYS = ('created_at',)
FILTER_SCHEMAS = {
    'method': {'type': 'string', 'pattern': r'^[a-z_]{1,64}\Z'},
}


class ChangesController(rest.RestController):

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:change:get', pecan.request.context)
        query = listing.ListQuery(params, FILTERS, SORT_KEYS, FILTER_SCHEMAS)
        found = pecan.request.conductor_api.list_changes(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, found, dict)
