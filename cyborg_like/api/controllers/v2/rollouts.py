"""/v2/rollouts: a bitstream, firmware or driver version rolled across the
fleet in waves, with a canary, a health gate, bounds on unavailability and
rollback (ours; docs/rollouts.md).

Creating answers 201 with the rollout (its targets resolved and counted by
wave); the conductors carry it on. ``dry_run`` answers the waves it would
have, and nothing is written. pause, resume, abort and rollback are
actions of their own, as an operation's cancel is.
"""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.schemas import rollouts as schema
from cyborg_like.common import states

RESOURCE = 'rollouts'


def view(rollout):
    return dict(rollout, links=listing.self_link(RESOURCE, rollout['uuid']))


class RolloutsController(rest.RestController):
    _custom_actions = {'pause': ['POST'], 'resume': ['POST'],
                       'abort': ['POST'], 'rollback': ['POST'],
                       'targets': ['GET']}

    @pecan.expose('json')
    def post(self):
        policy.authorize('cyborg:rollout:create', pecan.request.context)
        body = validation.body(pecan.request, schema.CREATE)
        if body['kind'] == 'driver':
            validation.validate(schema.driver_parameters(body),
                                schema.driver_parameters_value(body),
                                what='body')
        dry_run = body.pop('dry_run', False)
        found = pecan.request.conductor_api.create_rollout(
            pecan.request.context, body, dry_run=dry_run)
        if dry_run:
            return found
        pecan.response.status = 201
        pecan.response.location = view(found)['links'][0]['href']
        return view(found)

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:rollout:get', pecan.request.context)
        query = listing.ListQuery(params, schema.FILTERS, schema.SORT_KEYS,
                                  schema.FILTER_SCHEMAS)
        found = pecan.request.conductor_api.list_rollouts(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, found, view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:rollout:get', pecan.request.context)
        return view(pecan.request.conductor_api.get_rollout(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def targets(self, uuid, **params):
        """A page of the rollout's targets in wave order."""
        policy.authorize('cyborg:rollout:get', pecan.request.context)
        params = validation.validate(schema.TARGETS_QUERY, dict(params))
        filters = {k: params[k] for k in ('state', 'hostname')
                   if k in params}
        if 'wave' in params:
            filters['wave'] = int(params['wave'])
        limit = listing.page_size(params)
        marker = int(params['marker']) if 'marker' in params else None
        found = pecan.request.conductor_api.list_rollout_targets(
            pecan.request.context, uuid, filters, limit, marker)
        body = {'targets': found}
        if len(found) == limit:
            body['next'] = listing.next_link(
                '%s/%s/targets' % (RESOURCE, uuid), params, limit,
                str(found[-1]['id']))
        return body

    def _act(self, uuid, action):
        policy.authorize('cyborg:rollout:%s' % action, pecan.request.context)
        validation.validate(schema.NO_QUERY, dict(pecan.request.GET))
        return view(pecan.request.conductor_api.rollout_action(
            pecan.request.context, uuid, action))

    @pecan.expose('json')
    def pause(self, uuid):
        return self._act(uuid, states.PAUSE)

    @pecan.expose('json')
    def resume(self, uuid):
        return self._act(uuid, states.RESUME)

    @pecan.expose('json')
    def abort(self, uuid):
        return self._act(uuid, states.ABORT)

    @pecan.expose('json')
    def rollback(self, uuid):
        """Put back what a finished rollout changed, in waves."""
        return self._act(uuid, states.ROLLBACK)
