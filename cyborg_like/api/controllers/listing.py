"""What every list handler shares: its query and its page of results."""

import urllib.parse

import pecan

from cyborg_like.api import hooks
from cyborg_like.api import validation


class ListQuery:
    """Validated filters, page size, marker and sort order of a list."""

    def __init__(self, params, filters, sort_keys, filter_schemas=None):
        params = dict(params)
        validation.validate(validation.list_query_schema(
            filters, sort_keys, filter_schemas), params)
        self.filters = {k: v for k, v in params.items() if k in filters}
        self.limit = page_size(params)
        self.marker = params.get('marker')
        self.sort_key = params.get('sort_key', 'created_at')
        self.sort_dir = params.get('sort_dir', 'asc')
        self._params = params

    def as_kwargs(self):
        return {'filters': self.filters, 'limit': self.limit,
                'marker': self.marker, 'sort_key': self.sort_key,
                'sort_dir': self.sort_dir}

    def page(self, resource, items, view):
        """The response body: the items, and ``next`` when the page is full.
        """
        body = {resource: [view(item) for item in items]}
        if len(items) == self.limit:
            body['next'] = next_link(resource, self._params, self.limit,
                                     items[-1]['uuid'])
        return body


def page_size(params):
    """The validated ``limit`` of a list's query, cut to ``[api]
    max_limit`` (also the default)."""
    max_limit = pecan.request.api_conf.max_limit
    return min(int(params.get('limit', max_limit)), max_limit)


def next_link(resource, params, limit, marker):
    """The URL of the page after one that ended with ``marker``: the
    same query, ``limit`` and ``marker`` set."""
    query = dict(params, limit=str(limit), marker=marker)
    return '%s/v2/%s?%s' % (hooks.public_url(pecan.request), resource,
                            urllib.parse.urlencode(sorted(query.items())))


def self_link(resource, uuid):
    base = hooks.public_url(pecan.request)
    return [{'href': '%s/v2/%s/%s' % (base, resource, uuid), 'rel': 'self'}]
