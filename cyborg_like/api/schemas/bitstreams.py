"""JSON schemas of the image catalog's requests."""

from cyborg_like.api import validation

# Any spelling of a UUID: dashed or 32 hex digits, any case.
ANY_UUID = {'type': 'string',
            'pattern': r'^(0x)?[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}'
                       r'[0-9a-fA-F]{12}\Z'}
PCI_ID = {'type': 'string', 'pattern': r'^0x[0-9a-fA-F]{4}\Z'}
SHA256 = {'type': 'string', 'pattern': r'^[0-9a-f]{64}\Z'}
KINDS = ('bitstream', 'firmware')

CREATE = {
    'type': 'object',
    'properties': {
        'name': validation.text(),
        'description': validation.text(max_length=1024, min_length=0),
        'kind': {'enum': list(KINDS)},
        'vendor': PCI_ID,
        'board': PCI_ID,
        'interface_id': ANY_UUID,
        'hardware_id': ANY_UUID,
        'function_name': validation.text(),
        'function_version': validation.text(max_length=64),
        'sha256': SHA256,
    },
    'required': ['name'],
    'additionalProperties': False,
}

# The digest a client may send with the data (lower-case hex).
SHA256_HEADER = 'X-Image-Sha256'

LIST_FILTER_SCHEMAS = {
    'kind': {'enum': list(KINDS)},
    'status': {'enum': ['queued', 'uploading', 'active', 'failed']},
    'vendor': PCI_ID,
    'board': PCI_ID,
    'interface_id': ANY_UUID,
    'hardware_id': ANY_UUID,
}
