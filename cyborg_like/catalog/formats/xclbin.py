"""Xilinx xclbin images (XRT's "axlf" container), as XRT's xclbin.h lays
them out (all little-endian)::

    offset   0  char[8]   magic "xclbin2\\0"
    offset   8  int32     signature length (-1: unsigned), 28 reserved
    offset  40  256 bytes key block, then uint64 unique id
    offset 304  axlf_header (152 bytes):
        +0 uint64 m_length (the whole file), +8 time stamp, +16 feature ROM
        time stamp, +24 uint16 patch, uint8 major, uint8 minor, +28 uint16
        m_mode, +30 uint16 action mask, +32 m_interface_uuid[16],
        +48 m_platformVBNV[64] (NUL-terminated), +112 uuid[16] of this
        xclbin, +128 debug bin name[16], +144 uint32 m_numSections
    offset 456  m_numSections section headers of 40 bytes: uint32 kind,
                char[16] name, (4 bytes padding), uint64 offset, uint64 size

What an image needs: an xclbin for the user partition names the shell
interface it was linked against in ``m_interface_uuid``; older ones leave
that zero and carry it in their PARTITION_METADATA section (a device tree
whose ``interface_uuid`` properties list it). A flat image for a
single-region platform names no interface, only its platform (VBNV).
An image holding a flash image (MCS or ASK_FLASH section) is a card's
shell/base firmware, flashed with ``xbmgmt program --base``, not loaded
into a region.

Only sections whose data lie within the bytes given are read (the section
table itself must be there); the rest of the file is not looked at.
"""

import re
import struct
import uuid

from cyborg_like.catalog import formats
from cyborg_like.catalog.formats import fdt
from cyborg_like.common import exception

NAME = 'xclbin'
VENDOR = '0x10ee'
# Alveo cards named in platform names (xilinx_<card>_...) -> the PCI device
# id of their management function, by which the card is listed.
BOARDS = {'u200': '0x5000', 'u250': '0x5004', 'u280': '0x500c',
          'u50': '0x5020', 'u55c': '0x505c'}
_CARD = re.compile(r'^xilinx[_:]([a-z0-9]+)[_:]')
MAGIC = b'xclbin2\0'
HEADER_OFFSET = 304
HEADER = struct.Struct('<QQQHBBHH16s64s16s16sI4x')
SECTIONS_OFFSET = HEADER_OFFSET + 152
SECTION = struct.Struct('<I16s4xQQ')
MAX_SECTIONS = 0x10000          # XCLBIN_MAX_NUM_SECTION
# axlf_section_kind values read here.
IP_LAYOUT = 8
MCS = 12
PARTITION_METADATA = 20
ASK_FLASH = 24
FLASH_SECTIONS = (MCS, ASK_FLASH)
IP_KERNEL = 1
IP_DATA = struct.Struct('<IIQ64s')
ZERO_UUID = b'\0' * 16
#: How many leading bytes of a file ``parse`` may need: the headers and
#: the small metadata sections xclbinutil usually places before the
#: bitstream.
HEAD_SIZE = 1024 * 1024


def _invalid(reason):
    return exception.InvalidImage(reason='xclbin: ' + reason)


def parse(head):
    """What ``head`` (the first bytes of an image) declares, or None when
    it is not an xclbin."""
    if head[:8] != MAGIC:
        return None
    if len(head) < SECTIONS_OFFSET:
        raise _invalid('shorter than its %d-byte header' % SECTIONS_OFFSET)
    (length, _, _, _, _, _, _, _, interface, vbnv, own, _,
     count) = HEADER.unpack_from(head, HEADER_OFFSET)
    sections = _sections(head, length, count)
    flash = any(kind in FLASH_SECTIONS for kind, _, _ in sections)
    return {'kind': 'firmware' if flash else 'bitstream',
            'vendor': VENDOR,
            'board': _board(_cstring(vbnv)),
            'interface_id': None if flash else
            _interface(head, interface, sections),
            'function_name': _kernel(head, sections),
            'hardware_id': None if own == ZERO_UUID else
            str(uuid.UUID(bytes=own))}


def _board(vbnv):
    match = _CARD.match(vbnv.lower())
    return BOARDS.get(match.group(1)) if match else None


def _sections(head, length, count):
    """[(kind, offset, size)] of the section table, checked against the
    file's declared length."""
    if count > MAX_SECTIONS:
        raise _invalid('%d sections, more than XRT accepts' % count)
    end = SECTIONS_OFFSET + count * SECTION.size
    if end > len(head):
        raise _invalid('section table of %d entries runs past the first '
                       '%d bytes' % (count, len(head)))
    if length < end:
        raise _invalid('header length %d is shorter than its headers'
                       % length)
    sections = []
    for index in range(count):
        kind, _, offset, size = SECTION.unpack_from(
            head, SECTIONS_OFFSET + index * SECTION.size)
        if offset + size > length:
            raise _invalid('section %d (kind %d) ends at %d, past the '
                           'file length %d' % (index, kind, offset + size,
                                               length))
        sections.append((kind, offset, size))
    return sections


def _interface(head, interface, sections):
    if interface != ZERO_UUID:
        return str(uuid.UUID(bytes=interface))
    for kind, offset, size in sections:
        if kind == PARTITION_METADATA and offset + size <= len(head):
            found = _metadata_interfaces(head[offset:offset + size])
            if found:
                return found[0]
    return None


def _metadata_interfaces(blob):
    try:
        values = [value for _, name, value in fdt.properties(blob)
                  if name == 'interface_uuid']
    except fdt.FDTError as e:
        raise _invalid('PARTITION_METADATA: %s' % e)
    found = []
    for value in values:
        text = _cstring(value)
        try:
            found.append(str(uuid.UUID(text)))
        except ValueError:
            raise _invalid('PARTITION_METADATA interface_uuid %r is not a '
                           'UUID' % text)
    return found


def _kernel(head, sections):
    """The kernel name of the first compute unit in IP_LAYOUT (its
    ip_data names are "<kernel>:<instance>")."""
    for kind, offset, size in sections:
        if kind != IP_LAYOUT or offset + size > len(head) or size < 8:
            continue
        (count,) = struct.unpack_from('<i', head, offset)
        if count < 0 or 8 + count * IP_DATA.size > size:
            raise _invalid('IP_LAYOUT of %d entries does not fit its %d '
                           'bytes' % (count, size))
        for index in range(count):
            ip_type, _, _, name = IP_DATA.unpack_from(
                head, offset + 8 + index * IP_DATA.size)
            if ip_type == IP_KERNEL:
                return _cstring(name).split(':')[0] or None
    return None


def _cstring(raw):
    return raw.split(b'\0', 1)[0].decode('utf-8', 'replace')


formats.register(NAME, parse)
