"""JSON schemas of device requests (ours, beside Cyborg's)."""

from cyborg_like.api.schemas import bitstreams

# POST /v2/devices/{uuid}/firmware: the catalog image to flash.
FIRMWARE = {
    'type': 'object',
    'properties': {'image_uuid': bitstreams.ANY_UUID},
    'required': ['image_uuid'],
    'additionalProperties': False,
}

# POST /v2/devices/{uuid}/mig_layout: NVML MIG profile names, one per MIG
# device ("1g.10gb", "3g.40gb", "1g.10gb+me"); [] is the whole GPU. No GPU
# makes more than seven MIG devices.
MIG_PROFILE = {'type': 'string',
               'pattern': r'^[1-8]g\.[0-9]{1,4}gb(\+[a-z]{1,8})?\Z'}
MIG_LAYOUT = {
    'type': 'object',
    'properties': {'layout': {'type': 'array', 'items': MIG_PROFILE,
                              'maxItems': 7}},
    'required': ['layout'],
    'additionalProperties': False,
}
