"""/v2/attributes: resource class and traits of deployables."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.schemas import attributes as schema

RESOURCE = 'attributes'


def _view(attribute):
    return dict(attribute, links=listing.self_link(RESOURCE,
                                                   attribute['uuid']))


class AttributesController(rest.RestController):

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:attribute:get_all', pecan.request.context,
                         policy.CLOUD)
        query = listing.ListQuery(params, schema.LIST_FILTERS,
                                  schema.SORT_KEYS, schema.FILTER_SCHEMAS)
        filters = dict(query.filters)
        if 'deployable_id' in filters:
            filters['deployable_id'] = int(filters['deployable_id'])
        found = pecan.request.conductor_api.list_attributes(
            pecan.request.context, filters, query.limit, query.marker,
            query.sort_key, query.sort_dir)
        return query.page(RESOURCE, found, _view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:attribute:get_one', pecan.request.context,
                         policy.CLOUD)
        return _view(pecan.request.conductor_api.get_attribute(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def post(self):
        policy.authorize('cyborg:attribute:create', pecan.request.context,
                         policy.CLOUD)
        body = validation.body(pecan.request, schema.CREATE)
        created = pecan.request.conductor_api.create_attribute(
            pecan.request.context, body['deployable_id'], body['key'],
            body['value'])
        pecan.response.status = 201
        return _view(created)

    @pecan.expose('json')
    def delete(self, uuid):
        policy.authorize('cyborg:attribute:delete', pecan.request.context,
                         policy.CLOUD)
        pecan.request.conductor_api.delete_attribute(pecan.request.context,
                                                     uuid)
        pecan.response.status = 204
