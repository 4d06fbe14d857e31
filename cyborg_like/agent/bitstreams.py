"""Where the agent finds the bitstream a device profile names."""

import os
import re

from cyborg_like.common import exception

# Ids are names, never paths: nothing outside bitstream_dir is reachable.
_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,254}\Z')


def locate(bitstream_dir, bitstream_id):
    if not _ID.match(bitstream_id):
        raise exception.Invalid('Invalid bitstream id %r.' % bitstream_id)
    path = os.path.join(bitstream_dir, bitstream_id)
    if not os.path.isfile(path):
        raise exception.DriverError(
            driver='agent', reason='bitstream %s is not in %s' % (
                bitstream_id, bitstream_dir))
    return path
