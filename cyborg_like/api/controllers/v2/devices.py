"""/v2/devices: the physical accelerators on every host."""

import pecan
from pecan import rest

from cyborg_like.api import microversion
from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.controllers.v2 import operations
from cyborg_like.api.schemas import devices as schema
from cyborg_like.catalog import metadata
from cyborg_like.common import listing as fields

RESOURCE = 'devices'
_HEALTH_QUERY = {
    'type': 'object',
    'properties': {'history': {'type': 'string',
                               'pattern': r'^([0-9]|[1-9][0-9]{1,2}|1000)\Z'}},
    'additionalProperties': False,
}
_FIELDS = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
           'vendor_board_info', 'hostname', 'created_at', 'updated_at')


def _view(device):
    shown = {k: device[k] for k in _FIELDS}
    if pecan.request.version >= microversion.DEVICE_STATUS:
        shown['status'] = device['status']
    if pecan.request.version >= microversion.DEVICE_DRAIN:
        shown.update(_drain(device))
    shown['links'] = listing.self_link(RESOURCE, device['uuid'])
    return shown


def _drain(device):
    """``drained`` and ``drain_reasons`` (2.4). A conductor older than
    RPC 1.26 sends no reasons: its driver operations' drains are what it
    shows (``drained_by``)."""
    reasons = device.get('drain_reasons')
    if reasons is None:
        reasons = [] if device.get('drained_by') is None else [{
            'cause': 'driver_operation', 'operation_uuid':
            device['drained_by'], 'reason': device.get('drain_reason')}]
    return {'drained': bool(reasons), 'drain_reasons': reasons}


def _health_view(health):
    """As the conductor reads it; from 2.4 with the drain, and a drained
    device's ``service_state`` is drained whatever drained it (its
    readings, or an operation)."""
    shown = {k: v for k, v in health.items() if k != 'drain_reasons'}
    if pecan.request.version >= microversion.DEVICE_DRAIN:
        drain = _drain(health)
        shown.update(drain)
        if drain['drained']:
            shown['service_state'] = 'drained'
    return shown


class DevicesController(rest.RestController):
    _custom_actions = {'disable': ['POST'], 'enable': ['POST'],
                       'health': ['GET'], 'firmware': ['POST'],
                       'mig_layout': ['POST']}

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:device:get_all', pecan.request.context,
                         policy.CLOUD)
        query = listing.ListQuery(params, fields.DEVICE_FILTERS,
                                  fields.DEVICE_SORT_KEYS)
        devices = pecan.request.conductor_api.list_devices(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, devices, _view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:device:get_one', pecan.request.context,
                         policy.CLOUD)
        return _view(pecan.request.conductor_api.get_device(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def disable(self, uuid):
        """Take a device out of service: it is not bound until enabled."""
        policy.authorize('cyborg:device:disable', pecan.request.context,
                         policy.CLOUD)
        return _view(pecan.request.conductor_api.set_device_status(
            pecan.request.context, uuid, 'maintaining'))

    @pecan.expose('json')
    def enable(self, uuid):
        policy.authorize('cyborg:device:enable', pecan.request.context,
                         policy.CLOUD)
        return _view(pecan.request.conductor_api.set_device_status(
            pecan.request.context, uuid, 'enabled'))

    @pecan.expose('json')
    def health(self, uuid, **params):
        """The latest health and utilization, and recent readings (ours)."""
        policy.authorize('cyborg:device:get_one', pecan.request.context,
                         policy.CLOUD)
        validation.validate(_HEALTH_QUERY, params)
        return _health_view(pecan.request.conductor_api.get_device_health(
            pecan.request.context, uuid, int(params.get('history', 60))))

    @pecan.expose('json')
    def firmware(self, uuid):
        """Flash the device with a catalog firmware image (ours): 202 and
        the operation to poll; the device is drained meanwhile."""
        policy.authorize('cyborg:device:firmware', pecan.request.context,
                         policy.CLOUD)
        body = validation.body(pecan.request, schema.FIRMWARE)
        return _accepted(pecan.request.conductor_api.flash_device_firmware(
            pecan.request.context, uuid,
            metadata.normalized_uuid(body['image_uuid'])))

    @pecan.expose('json')
    def mig_layout(self, uuid):
        """Cut a GPU into the MIG devices of a layout (ours): 202 and the
        operation to poll; the GPU is drained meanwhile."""
        policy.authorize('cyborg:device:mig_layout', pecan.request.context,
                         policy.CLOUD)
        body = validation.body(pecan.request, schema.MIG_LAYOUT)
        return _accepted(pecan.request.conductor_api.apply_mig_layout(
            pecan.request.context, uuid, body['layout']))


def _accepted(started):
    """202 with the drained device and the operation working on it."""
    operation = operations.view(started['operation'])
    pecan.response.status = 202
    pecan.response.headers['Location'] = operation['links'][0]['href']
    return {'device': _view(started['device']), 'operation': operation}
