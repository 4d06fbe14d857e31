"""/v2: the version document and the route table of the v2 API."""

import pecan
from pecan import rest

from cyborg_like.api import hooks
from cyborg_like.api import microversion
from cyborg_like.api.controllers.v2 import accelerator_requests
from cyborg_like.api.controllers.v2 import attributes
from cyborg_like.api.controllers.v2 import availability
from cyborg_like.api.controllers.v2 import bitstreams
from cyborg_like.api.controllers.v2 import changes
from cyborg_like.api.controllers.v2 import deployables
from cyborg_like.api.controllers.v2 import device_profiles
from cyborg_like.api.controllers.v2 import devices
from cyborg_like.api.controllers.v2 import hosts
from cyborg_like.api.controllers.v2 import leases
from cyborg_like.api.controllers.v2 import operations
from cyborg_like.api.controllers.v2 import quotas
from cyborg_like.api.controllers.v2 import rollouts
from cyborg_like.api.controllers.v2 import usage


def version_document():
    return {
        'id': 'v2.0',
        'status': 'CURRENT',
        'min_version': str(microversion.MIN_VERSION),
        'max_version': str(microversion.MAX_VERSION),
        'links': [{'href': hooks.public_url(pecan.request) + '/v2/',
                   'rel': 'self'}],
    }


class V2Controller(rest.RestController):
    # Every route of the v2 API, in one place.
    devices = devices.DevicesController()
    deployables = deployables.DeployablesController()
    device_profiles = device_profiles.DeviceProfilesController()
    accelerator_requests = \
        accelerator_requests.AcceleratorRequestsController()
    attributes = attributes.AttributesController()
    operations = operations.OperationsController()
    hosts = hosts.HostsController()
    quotas = quotas.QuotasController()
    bitstreams = bitstreams.BitstreamsController()
    availability = availability.AvailabilityController()
    leases = leases.LeasesController()
    rollouts = rollouts.RolloutsController()
    changes = changes.ChangesController()
    usage = usage.UsageController()

    @pecan.expose('json')
    def get(self):
        return version_document()
