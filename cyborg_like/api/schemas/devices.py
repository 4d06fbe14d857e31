"""JSON schemas of device requests (ours, beside Cyborg's)."""

from cyborg_like.api.schemas import bitstreams

# POST /v2/devices/{uuid}/firmware: the catalog image to flash.
FIRMWARE = {
    'type': 'object',
    'properties': {'image_uuid': bitstreams.ANY_UUID},
    'required': ['image_uuid'],
    'additionalProperties': False,
}
