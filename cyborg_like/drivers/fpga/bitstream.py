"""Bitstream files and identities, checked before anything is programmed.

The expected sha256 of a bitstream comes from the caller, or else from a
file beside it named ``<bitstream>.sha256`` in sha256sum's format
(``<64 hex digits>  <file name>``), so ``sha256sum x.gbs > x.gbs.sha256``
writes one. The agent that downloads a bitstream writes that file from the
image service's checksum; an operator can write it by hand.

Bitstream identities are UUIDs (an Intel AFU id, a Xilinx xclbin uuid).
sysfs shows them in different spellings (32 hex digits for DFL, dashed for
XRT); they are compared as 32 lower-case hex digits and reported dashed.
"""

import hashlib
import os
import re

from cyborg_like.common import exception

_SHA256 = re.compile(r'^[0-9a-f]{64}\Z')
_UUID_HEX = re.compile(r'^[0-9a-f]{32}\Z')


def verify(driver, path, sha256=None, required=True):
    """Raise DriverError unless ``path`` is a file with the expected sha256.

    ``sha256`` overrides ``<path>.sha256``; with neither, the file is
    refused when ``required``.
    """
    if not os.path.isfile(path):
        raise exception.DriverError(
            driver=driver, reason='bitstream %s does not exist' % path)
    expected = _normalized_digest(driver, sha256) if sha256 else \
        _sidecar_digest(driver, path)
    if expected is None:
        if required:
            raise exception.DriverError(
                driver=driver,
                reason='no sha256 known for bitstream %s: write %s.sha256 '
                       '(sha256sum format) or pass the digest' % (path, path))
        return
    actual = file_sha256(path)
    if actual != expected:
        raise exception.DriverError(
            driver=driver,
            reason='sha256 mismatch for bitstream %s: expected %s, the file '
                   'has %s' % (path, expected, actual))


def file_sha256(path):
    with open(path, 'rb') as f:
        return hashlib.file_digest(f, 'sha256').hexdigest()


def _sidecar_digest(driver, path):
    try:
        with open(path + '.sha256') as f:
            words = f.read().split()
    except FileNotFoundError:
        return None
    return _normalized_digest(driver, words[0] if words else '')


def _normalized_digest(driver, digest):
    digest = digest.strip().lower()
    if not _SHA256.match(digest):
        raise exception.DriverError(
            driver=driver, reason='%r is not a sha256 digest' % digest)
    return digest


def uuid_hex(text):
    """Any spelling of a UUID -> 32 lower-case hex digits; None if not one."""
    if not text:
        return None
    value = text.strip().lower().replace('-', '').removeprefix('0x')
    return value if _UUID_HEX.match(value) else None


def uuid_text(hex32):
    """32 hex digits -> the dashed form (``8-4-4-4-12``)."""
    if hex32 is None:
        return None
    h = hex32
    return '-'.join((h[:8], h[8:12], h[12:16], h[16:20], h[20:]))
