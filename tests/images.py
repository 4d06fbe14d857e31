"""Builders of FPGA image files in their vendors' real formats, for tests.

Written from the published layouts (see cyborg_like/catalog/formats/gbs.py
and xclbin.py for the byte maps), independently of the parsers: offsets
are spelled out here again so a parser bug is not mirrored by the fixture.
"""

import json
import struct
import uuid

GBS_GUID = bytes.fromhex('58656f6e 4650 4741 b747 425376303031')
GBS_MAGIC_NO = 488605312
BLOCK0_MAGIC = 0xb6eafd19
SIGNED_FIM, SIGNED_BMC, SIGNED_GBS = 0, 1, 2

XCLBIN_MAGIC = b'xclbin2\0'
IP_LAYOUT, MCS, PARTITION_METADATA, BITSTREAM = 8, 12, 20, 0


# -- Intel -------------------------------------------------------------------

def gbs_metadata(interface_id, afu_id, name='nlb0', platform='n3000',
                 version=1, magic=GBS_MAGIC_NO, **image_overrides):
    image = {'magic-no': magic, 'interface-uuid': interface_id,
             'clock-frequency-high': 312.5, 'clock-frequency-low': 156.25,
             'power': 0,
             'accelerator-clusters': [{'name': name, 'total-contexts': 1,
                                       'accelerator-type-uuid': afu_id}]}
    image.update(image_overrides)
    return {'version': version, 'platform-name': platform,
            'afu-image': image}


def gbs(interface_id, afu_id, payload=b'\x00rbf' * 64, metadata=None,
        **metadata_args):
    """A GBS as OPAE's packager writes one: GUID, little-endian metadata
    length, JSON metadata, raw bitstream."""
    if metadata is None:
        metadata = gbs_metadata(interface_id, afu_id, **metadata_args)
    raw = metadata if isinstance(metadata, bytes) else \
        json.dumps(metadata).encode()
    return GBS_GUID + struct.pack('<I', len(raw)) + raw + payload


def signed(content, content_type):
    """``content`` behind PACSign's authentication blocks: Block0 (magic,
    content length, content type, reserved, sha256, sha384, reserved:
    128 bytes) and Block1 (896 bytes, signature chain; zeros here)."""
    block0 = struct.pack('<IIII', BLOCK0_MAGIC, len(content),
                         content_type, 0)
    block0 += b'\0' * (128 - len(block0))
    return block0 + b'\0' * 896 + content


# -- Xilinx ------------------------------------------------------------------

def fdt(nodes):
    """A flattened device tree: ``nodes`` maps node paths ('' for the root,
    'a/b' nested) to {property: str value}; parents before children."""
    strings = b''
    offsets = {}
    tokens = []

    def name_offset(name):
        nonlocal strings
        if name not in offsets:
            offsets[name] = len(strings)
            strings += name.encode() + b'\0'
        return offsets[name]

    def pad(data):
        return data + b'\0' * (-len(data) % 4)

    def emit(path, depth_children):
        name = path.rsplit('/', 1)[-1] if path else ''
        tokens.append(struct.pack('>I', 1) + pad(name.encode() + b'\0'))
        for key, value in nodes[path].items():
            raw = value.encode() + b'\0'
            tokens.append(struct.pack('>III', 3, len(raw), name_offset(key))
                          + pad(raw))
        for child in depth_children(path):
            emit(child, depth_children)
        tokens.append(struct.pack('>I', 2))

    def children(path):
        prefix = path + '/' if path else ''
        return [p for p in nodes if p.startswith(prefix) and p != path
                and '/' not in p[len(prefix):]]

    emit('', children)
    structure = b''.join(tokens) + struct.pack('>I', 9)
    off_rsv = 40
    off_struct = off_rsv + 16
    off_strings = off_struct + len(structure)
    total = off_strings + len(strings)
    header = struct.pack('>10I', 0xd00dfeed, total, off_struct, off_strings,
                         off_rsv, 17, 16, 0, len(strings), len(structure))
    return header + b'\0' * 16 + structure + strings


def partition_metadata(*interface_ids):
    nodes = {'': {}, 'interfaces': {}}
    for index, interface_id in enumerate(interface_ids):
        nodes['interfaces/@%d' % index] = {
            'interface_uuid': interface_id.replace('-', '')}
    return fdt(nodes)


def ip_layout(*kernels):
    """IP_LAYOUT with one IP_KERNEL compute unit per "kernel:instance"."""
    body = struct.pack('<i4x', len(kernels))
    for index, name in enumerate(kernels):
        body += struct.pack('<IIQ64s', 1, 0, 0x1800000 + index * 0x10000,
                            name.encode())
    return body


def xclbin(interface_id=None, xclbin_uuid=None,
           vbnv='xilinx_u250_gen3x16_xdma_shell_3_1', sections=(),
           magic=XCLBIN_MAGIC, length=None, num_sections=None):
    """An axlf: 304-byte preamble, 152-byte header, 40-byte section
    headers, then the sections' data, each 8-byte aligned.
    ``sections``: (kind, name, data) triples."""
    table = 304 + 152 + 40 * len(sections)
    offset = (table + 7) & ~7
    headers, body = b'', b''
    for kind, name, data in sections:
        headers += struct.pack('<I16s4xQQ', kind, name.encode(),
                               offset + len(body), len(data))
        body += data + b'\0' * (-len(data) % 8)
    total = offset + len(body)
    interface = uuid.UUID(interface_id).bytes if interface_id else b'\0' * 16
    own = uuid.UUID(xclbin_uuid or str(uuid.uuid4())).bytes
    header = struct.pack(
        '<QQQHBBHH16s64s16s16sI4x', total if length is None else length,
        1700000000, 0, 0, 2, 16, 1 if interface_id else 0, 0, interface,
        vbnv.encode(), own, b'', len(sections) if num_sections is None
        else num_sections)
    preamble = magic + struct.pack('<i', -1) + b'\xff' * 28 + \
        b'\0' * 256 + struct.pack('<Q', 0)
    image = preamble + header + headers
    return image + b'\0' * (offset - len(image)) + body
