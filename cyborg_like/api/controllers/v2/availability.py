"""/v2/availability: free, used and reserved accelerators, grouped (ours).

Cheap to poll: every answer carries an ETag made of the feed's cursor and
the grouping asked for, and ``If-None-Match`` with it answers 304 as long
as nothing changed (the conductor compares one number, it reads no
device); ``?since=<cursor>`` answers only the groups of the hosts that
changed after that cursor.
"""

import hashlib

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.schemas import availability as schema


def _etag(cursor, group_by, at=None):
    shown = ','.join(group_by) + ('@' + at if at else '')
    digest = hashlib.sha256(shown.encode()).hexdigest()[:12]
    return '"%d-%s"' % (cursor, digest)


def _known_cursor(request, group_by, at=None):
    """The cursor of an ETag the client sent for this grouping, or None."""
    for tag in request.headers.get('If-None-Match', '').split(','):
        tag = tag.strip().removeprefix('W/')
        cursor = tag.strip('"').partition('-')[0]
        if cursor.isdigit() and len(cursor) < 19 and \
                _etag(int(cursor), group_by, at) == tag:
            return int(cursor)
    return None


class AvailabilityController(rest.RestController):

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:availability:get', pecan.request.context,
                         policy.CLOUD)
        validation.validate(schema.QUERY, params)
        group_by = schema.group_by(params.get('group_by'))
        since = int(params['since']) if 'since' in params else None
        # ``at``: leases in a window then count as reserved.
        at = params.get('at')
        feed = pecan.request.conductor_api.get_availability(
            pecan.request.context, group_by, since,
            _known_cursor(pecan.request, group_by, at), at=at)
        pecan.response.headers['ETag'] = _etag(feed['cursor'], group_by, at)
        if feed.get('unchanged'):
            pecan.response.status = 304
            return None
        return feed
