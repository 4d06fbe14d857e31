"""/v2/hosts/{hostname}/driver_operations: install, upgrade, remove or
verify a vendor driver family on a host (ours). Answers 202 and the
operation to poll (/v2/operations/{uuid}); the host's agent runs the
family's playbook while the devices it drives are drained."""

import pecan
from pecan import rest

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers.v2 import operations
from cyborg_like.api.schemas import driver_operations as schema


class DriverOperationsController(rest.RestController):

    @pecan.expose('json')
    def post(self, hostname):
        context = pecan.request.context
        policy.authorize('cyborg:host:driver_operation:create', context,
                         policy.CLOUD)
        body = validation.body(pecan.request, schema.SHAPE)
        parameters = validation.validate(schema.family_schema(body),
                                         schema.family_parameters(body),
                                         what='body')
        request = dict(body, parameters=parameters)
        request.pop('version', None)
        if request.get('force'):
            policy.authorize('cyborg:host:driver_operation:force', context,
                             policy.CLOUD)
        started = pecan.request.conductor_api.start_driver_operation(
            context, hostname, request)
        operation = operations.view(started['operation'])
        pecan.response.status = 202
        pecan.response.headers['Location'] = operation['links'][0]['href']
        return operation
