"""Image metadata: what a client gives and what a header declares.

Used by the API (to refuse an upload whose header contradicts the image's
record before storing it) and by the conductor (which records the merge).
"""

from cyborg_like.common import exception

# What decides where an image can go (given at creation, or declared by
# the image's header; see catalog/formats).
KEYS = ('kind', 'vendor', 'board', 'interface_id', 'hardware_id',
        'function_name', 'function_version')
UUID_KEYS = ('interface_id', 'hardware_id')
PCI_ID_KEYS = ('vendor', 'board')


def normalized_uuid(value):
    """Any spelling of a UUID (dashes or not, any case, ``0x``) -> dashed
    lower case; None for anything else."""
    if not value:
        return None
    text = str(value).strip().lower().removeprefix('0x').replace('-', '')
    if len(text) != 32 or any(c not in '0123456789abcdef' for c in text):
        return None
    return '-'.join((text[:8], text[8:12], text[12:16], text[16:20],
                     text[20:]))


def normalized(key, value):
    if value is None:
        return None
    if key in UUID_KEYS:
        return normalized_uuid(value)
    if key in PCI_ID_KEYS:
        return str(value).lower()
    return value


def merge(given, declared):
    """``given`` metadata completed by ``declared`` (a header's); raises
    ImageMetadataMismatch where both say something different."""
    merged = {k: normalized(k, given.get(k)) for k in KEYS}
    for key, value in (declared or {}).items():
        value = normalized(key, value)
        if key not in KEYS or value is None:
            continue
        if merged[key] is None:
            merged[key] = value
        elif merged[key] != value:
            raise exception.ImageMetadataMismatch(
                key=key, declared=value, given=merged[key])
    return merged
