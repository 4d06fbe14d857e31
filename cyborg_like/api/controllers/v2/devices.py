"""/v2/devices: the physical accelerators on every host."""

import pecan
from pecan import rest

from cyborg_like.api import microversion
from cyborg_like.api.controllers import listing
from cyborg_like.common import listing as fields

RESOURCE = 'devices'
_FIELDS = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
           'vendor_board_info', 'hostname', 'created_at', 'updated_at')


def _view(device):
    shown = {k: device[k] for k in _FIELDS}
    if pecan.request.version >= microversion.DEVICE_STATUS:
        shown['status'] = device['status']
    shown['links'] = listing.self_link(RESOURCE, device['uuid'])
    return shown


class DevicesController(rest.RestController):
    _custom_actions = {'disable': ['POST'], 'enable': ['POST']}

    @pecan.expose('json')
    def get_all(self, **params):
        query = listing.ListQuery(params, fields.DEVICE_FILTERS,
                                  fields.DEVICE_SORT_KEYS)
        devices = pecan.request.conductor_api.list_devices(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, devices, _view)

    @pecan.expose('json')
    def get_one(self, uuid):
        return _view(pecan.request.conductor_api.get_device(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def disable(self, uuid):
        """Take a device out of service: it is not bound until enabled."""
        return _view(pecan.request.conductor_api.set_device_status(
            pecan.request.context, uuid, 'maintaining'))

    @pecan.expose('json')
    def enable(self, uuid):
        return _view(pecan.request.conductor_api.set_device_status(
            pecan.request.context, uuid, 'enabled'))
