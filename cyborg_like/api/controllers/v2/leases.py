"""/v2/leases: devices lent to a project for windows of time (ours;
docs/leases.md).

The lessee (the caller's project) creates a lease and may give it back
early; the lessor (the cloud admin, for the operator owns the devices)
sees every lease and may revoke one. Creation answers 409 when the
devices are not free in every window: to the lessor naming the lease
that holds one, to a project only how many were free (never another
project's objects). A lease takes devices another project's workload
holds only when ``cyborg:lease:preempt`` allows the caller.
"""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.schemas import leases as schema
from cyborg_like.common import states

RESOURCE = 'leases'


def view(lease):
    return dict(lease, links=listing.self_link(RESOURCE, lease['uuid']))


class LeasesController(rest.RestController):
    _custom_actions = {'give_back': ['POST']}

    @pecan.expose('json')
    def post(self):
        policy.authorize('cyborg:lease:create', pecan.request.context)
        body = validation.body(pecan.request, schema.CREATE)
        # Taking devices from other projects' workloads is the operator's
        # decision: the conductor refuses them unless this rule allows.
        preempt = policy.check('cyborg:lease:preempt', pecan.request.context)
        lease = pecan.request.conductor_api.create_lease(
            pecan.request.context, body, preempt=preempt)
        pecan.response.status = 201
        return view(lease)

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:lease:get', pecan.request.context)
        query = listing.ListQuery(params, schema.FILTERS, schema.SORT_KEYS,
                                  schema.FILTER_SCHEMAS)
        found = pecan.request.conductor_api.list_leases(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, found, view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:lease:get', pecan.request.context)
        return view(pecan.request.conductor_api.get_lease(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def give_back(self, uuid):
        """The lessee ends its lease early."""
        policy.authorize('cyborg:lease:give_back', pecan.request.context)
        validation.validate({'type': 'object', 'additionalProperties': False},
                            dict(pecan.request.GET))
        return view(pecan.request.conductor_api.end_lease(
            pecan.request.context, uuid, states.GIVE_BACK))

    @pecan.expose('json')
    def delete(self, uuid):
        """The lessor revokes a lease; 200 with it, revoked (kept for
        the record)."""
        policy.authorize('cyborg:lease:revoke', pecan.request.context)
        return view(pecan.request.conductor_api.end_lease(
            pecan.request.context, uuid, states.REVOKE))
