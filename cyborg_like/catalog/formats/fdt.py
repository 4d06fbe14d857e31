"""A reader of flattened device trees (the DTB format of the Devicetree
Specification, chapter 5), enough to list the properties of a blob.

XRT keeps an xclbin's PARTITION_METADATA section as such a blob. Layout:
a big-endian header (magic 0xd00dfeed, totalsize, off_dt_struct,
off_dt_strings, off_mem_rsvmap, version, last_comp_version,
boot_cpuid_phys, size_dt_strings, size_dt_struct), then a structure block
of 32-bit big-endian tokens: BEGIN_NODE (name, NUL-terminated, padded to 4
bytes), END_NODE, PROP (value length, offset of the name in the strings
block, value padded to 4 bytes), NOP, END.
"""

import struct

MAGIC = 0xd00dfeed
HEADER = struct.Struct('>10I')
BEGIN_NODE, END_NODE, PROP, NOP, END = 1, 2, 3, 4, 9


class FDTError(ValueError):
    pass


def properties(blob):
    """Yield (node path, property name, raw value) for every property."""
    if len(blob) < HEADER.size:
        raise FDTError('shorter than the device tree header')
    (magic, total, off_struct, off_strings, _, _, _, _, size_strings,
     size_struct) = HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise FDTError('bad device tree magic 0x%08x' % magic)
    if total > len(blob) or off_struct + size_struct > total or \
            off_strings + size_strings > total:
        raise FDTError('device tree blocks run past its %d bytes' % total)
    strings = blob[off_strings:off_strings + size_strings]
    yield from _walk(blob[off_struct:off_struct + size_struct], strings)


def _walk(block, strings):
    path = []
    offset = 0
    while offset + 4 <= len(block):
        (token,) = struct.unpack_from('>I', block, offset)
        offset += 4
        if token == BEGIN_NODE:
            name, offset = _cstring(block, offset)
            path.append(name)
        elif token == END_NODE:
            if not path:
                raise FDTError('END_NODE without a node')
            path.pop()
        elif token == PROP:
            if offset + 8 > len(block):
                raise FDTError('truncated property')
            length, name_offset = struct.unpack_from('>II', block, offset)
            offset += 8
            if offset + length > len(block):
                raise FDTError('property value runs past the block')
            name, _ = _cstring(strings, name_offset)
            yield '/'.join(path) or '/', name, block[offset:offset + length]
            offset = _aligned(offset + length)
        elif token == END:
            return
        elif token != NOP:
            raise FDTError('unknown device tree token %d' % token)
    raise FDTError('structure block ends without an END token')


def _cstring(data, offset):
    end = data.find(b'\0', offset)
    if end < 0:
        raise FDTError('unterminated name')
    return data[offset:end].decode('ascii', 'replace'), _aligned(end + 1)


def _aligned(offset):
    return (offset + 3) & ~3
