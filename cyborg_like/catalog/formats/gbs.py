"""Intel GBS images (OPAE's "green bitstream"), and the images signed for
Intel PACs that carry either a GBS or a card's firmware.

Layout, as OPAE's packager writes it and its libbitstream reads it::

    offset 0   16 bytes   GBS GUID 58656f6e-4650-4741-b747-425376303031
                          ("XeonFPGA" 0xb7 "GBSv001", stored byte for byte)
    offset 16  uint32 LE  length N of the metadata
    offset 20  N bytes    JSON metadata, then the raw bitstream (.rbf)

The metadata has a ``version`` (1; BBS 6.4.0/6.5.0 era tools wrote 640 or
650 for the same layout) and an ``afu-image`` object holding ``magic-no``
(always 488605312), the ``interface-uuid`` of the PR interface the image
was built for (what a region reports as its ``compat_id``) and its
``accelerator-clusters`` (the AFUs: ``name``, ``accelerator-type-uuid``,
the AFU id a port reports once the image is loaded). ``platform-name``
names the board family, mapped here to the card's PCI device id where known.

Cards that authenticate what they load (PAC N3000, D5005) take images that
PACSign prefixed with 1024 bytes of authentication blocks: Block0 (128
bytes: uint32 LE magic 0xb6eafd19, content length, content type whose low
byte is 0 for a static region (FIM), 1 for a BMC image, 2 for a GBS) and
Block1 (896 bytes). A signed GBS is a GBS after those blocks; a signed
static region or BMC image is card firmware, flashed with ``fpgasupdate``.
OPAE's pre-metadata "legacy" GBS (deprecated there) is not recognised.
"""

import json
import struct
import uuid

from cyborg_like.catalog import formats
from cyborg_like.common import exception

NAME = 'gbs'
VENDOR = '0x8086'
# OPAE platform names of PAC cards -> their PCI device ids.
BOARDS = {'pac_a10': '0x09c4', 'pac_s10_dc': '0x0b2b', 'd5005': '0x0b2b',
          'n3000': '0x0b30'}
GBS_GUID = bytes.fromhex('58656f6e46504741b747425376303031')
GBS_MAGIC_NO = 488605312
METADATA_VERSIONS = (1, 640, 650)
BLOCK0_MAGIC = 0xb6eafd19
AUTH_BLOCKS = 1024              # Block0 (128) + Block1 (896)
# Content types of Block0 (low byte of ConType) for card firmware.
FIRMWARE_TYPES = {0: 'fim', 1: 'bmc'}
CONTENT_GBS = 2
# The metadata of real GBS files is a few hundred bytes; anything beyond
# this is refused rather than read into memory.
MAX_METADATA = 64 * 1024
#: How many leading bytes of a file ``parse`` may need.
HEAD_SIZE = AUTH_BLOCKS + 20 + MAX_METADATA


def _invalid(reason):
    return exception.InvalidImage(reason='GBS: ' + reason)


def parse(head):
    """What ``head`` (the first bytes of an image) declares, or None when
    it is not an Intel GBS or signed PAC image."""
    if head[:16] == GBS_GUID:
        return _parse_gbs(head, signed=False)
    if len(head) >= 12 and struct.unpack_from('<I', head)[0] == BLOCK0_MAGIC:
        return _parse_signed(head)
    return None


def _parse_signed(head):
    if len(head) < AUTH_BLOCKS:
        raise _invalid('signed image shorter than its %d bytes of '
                       'authentication blocks' % AUTH_BLOCKS)
    content_type = struct.unpack_from('<I', head, 8)[0] & 0xff
    if content_type == CONTENT_GBS:
        return _parse_gbs(head[AUTH_BLOCKS:], signed=True)
    if content_type in FIRMWARE_TYPES:
        return {'kind': 'firmware', 'vendor': VENDOR,
                'function_name': FIRMWARE_TYPES[content_type]}
    raise _invalid('signed image of unknown content type %d' % content_type)


def _parse_gbs(data, signed):
    if data[:16] != GBS_GUID:
        raise _invalid('signed as a GBS but the GBS GUID is missing')
    if len(data) < 20:
        raise _invalid('shorter than the 20-byte header')
    (length,) = struct.unpack_from('<I', data, 16)
    if length == 0 or length > MAX_METADATA:
        raise _invalid('metadata length %d out of range (1..%d)'
                       % (length, MAX_METADATA))
    if 20 + length > len(data):
        raise _invalid('metadata length %d runs past the end of the '
                       'image' % length)
    metadata = _load_json(data[20:20 + length])
    image = _afu_image(metadata)
    clusters = image.get('accelerator-clusters') or [{}]
    first = clusters[0] if isinstance(clusters[0], dict) else {}
    return {'kind': 'bitstream', 'vendor': VENDOR,
            'board': BOARDS.get(metadata.get('platform-name')),
            'interface_id': _uuid(image.get('interface-uuid'),
                                  'interface-uuid'),
            'function_name': _text(first.get('name')),
            'hardware_id': _uuid(first.get('accelerator-type-uuid'),
                                 'accelerator-type-uuid')
            if 'accelerator-type-uuid' in first else None}


def _load_json(raw):
    try:
        metadata = json.loads(raw.decode('utf-8'))
    except (UnicodeDecodeError, ValueError) as e:
        raise _invalid('metadata is not JSON: %s' % e)
    if not isinstance(metadata, dict):
        raise _invalid('metadata is not a JSON object')
    return metadata


def _afu_image(metadata):
    version = metadata.get('version')
    if version not in METADATA_VERSIONS or isinstance(version, bool):
        raise _invalid('unsupported metadata version %r' % (version,))
    image = metadata.get('afu-image')
    if not isinstance(image, dict):
        raise _invalid('metadata has no "afu-image" object')
    if image.get('magic-no') != GBS_MAGIC_NO:
        raise _invalid('afu-image magic-no %r is not %d'
                       % (image.get('magic-no'), GBS_MAGIC_NO))
    return image


def _uuid(value, what):
    try:
        return str(uuid.UUID(value))
    except (TypeError, ValueError, AttributeError):
        raise _invalid('%s %r is not a UUID' % (what, value))


def _text(value):
    return value if isinstance(value, str) and value else None


formats.register(NAME, parse)
