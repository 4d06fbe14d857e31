"""The wire format of a host's inventory, from agent to conductor.

A host's inventory is a list of devices in Cyborg's data model::

    {"type": "FPGA", "vendor": "0x8086", "model": "...",
     "std_board_info": {...}, "vendor_board_info": {...},
     "controlpath_id": {"cpid_type": "PCI", "cpid_info": {...}},
     "deployables": [
        {"name": "...", "num_accelerators": 1, "driver_name": "fake",
         "bitstream_id": null, "attributes": {"rc": "FPGA", ...},
         "attach_handles": [{"attach_type": "PCI", "attach_info": {...}}]}]}

The control-path id is a device's identity on its host; a deployable's name
is its identity within the device; an attach handle's type and info are its
identity within the deployable.
"""

import hashlib
import json
import uuid

import jsonschema

from cyborg_like.common import exception

_INFO = {'type': 'object', 'additionalProperties': {'type': 'string'}}
_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}

_ATTACH_HANDLE = {
    'type': 'object',
    'properties': {
        # MIG: a MIG device by its uuid, for container runtimes (CUDA takes
        # it); never an mdev, which is what MDEV tells a VM consumer.
        'attach_type': {'enum': ['PCI', 'MDEV', 'MIG', 'TEST_PCI']},
        'attach_info': _INFO,
    },
    'required': ['attach_type', 'attach_info'],
    'additionalProperties': False,
}

_DEPLOYABLE = {
    'type': 'object',
    'properties': {
        'name': _NAME,
        'num_accelerators': {'type': 'integer', 'minimum': 0},
        'driver_name': {'type': 'string', 'maxLength': 100},
        'bitstream_id': {'type': ['string', 'null'], 'maxLength': 36},
        'attributes': {'type': 'object',
                       'propertyNames': {'maxLength': 255},
                       'additionalProperties': {'type': 'string',
                                                'maxLength': 255}},
        'attach_handles': {'type': 'array', 'items': _ATTACH_HANDLE},
    },
    'required': ['name', 'num_accelerators', 'driver_name',
                 'attach_handles'],
    'additionalProperties': False,
}

_DEVICE = {
    'type': 'object',
    'properties': {
        'type': {'enum': ['GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD']},
        'vendor': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'model': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'std_board_info': {'type': 'object'},
        'vendor_board_info': {'type': 'object'},
        'controlpath_id': {
            'type': 'object',
            'properties': {'cpid_type': {'enum': ['PCI']},
                           'cpid_info': _INFO},
            'required': ['cpid_type', 'cpid_info'],
            'additionalProperties': False,
        },
        'deployables': {'type': 'array', 'items': _DEPLOYABLE},
    },
    'required': ['type', 'vendor', 'model', 'controlpath_id', 'deployables'],
    'additionalProperties': False,
}

SCHEMA = {'type': 'array', 'items': _DEVICE}

_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def validate(host, devices):
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(devices))
    if error is not None:
        where = '/'.join(str(p) for p in error.absolute_path) or '(root)'
        raise exception.InvalidInventory(
            host=host, reason='%s: %s' % (where, error.message))
    seen = set()
    for device in devices:
        key = canonical(device['controlpath_id'])
        if key in seen:
            raise exception.InvalidInventory(
                host=host, reason='two devices share control path %s' % key)
        seen.add(key)


def canonical(document):
    """The one text form of a JSON document: keys sorted, no spaces."""
    return json.dumps(document, sort_keys=True, separators=(',', ':'))


def fingerprint(devices):
    """sha256 of an inventory, the same on agent and conductor."""
    return hashlib.sha256(canonical(devices).encode()).hexdigest()


def pci_address_info(address):
    """``'0000:5e:00.1'`` -> Cyborg's PCI info dict."""
    domain, bus, rest = address.split(':')
    device, function = rest.split('.')
    return {'domain': domain, 'bus': bus, 'device': device,
            'function': function}


def pci_address(info):
    """Cyborg's PCI info dict -> ``'0000:5e:00.1'``."""
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info


# Fixed namespace: the same deployable gets the same resource provider
# uuid on every conductor, and after any re-report.
_RP_NAMESPACE = uuid.UUID('2c5b0f5e-8f0e-4a57-9a39-5d1c1a6b3f70')


def deployable_rp_uuid(hostname, controlpath_id, deployable_name):
    """The Placement resource provider uuid of a deployable."""
    key = '%s|%s|%s' % (hostname, canonical(controlpath_id), deployable_name)
    return str(uuid.uuid5(_RP_NAMESPACE, key))
