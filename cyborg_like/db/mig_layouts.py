"""Applying a MIG layout to a GPU: accepting it (drained.py says how the
GPU is drained and put back).

An operation of type ``mig_layout`` on a device. The layout is a list of
MIG profile names (``["3g.40gb", "4g.40gb"]``; ``[]`` is the whole GPU,
MIG mode off); the agent's driver checks it against the profiles the GPU
offers before changing anything. Accepted only for a GPU that reports MIG
support and that nothing is bound to: the MIG devices are its deployables,
and reshaping them would pull them from under their workloads.
"""

import json

from cyborg_like.common import exception
from cyborg_like.db import api
from cyborg_like.db import drained

TYPE = 'mig_layout'


def start(device_uuid, layout, project_id, conductor_uuid=None):
    """(agent job, operation, device) of a newly accepted layout."""
    with api.writer() as session:
        device = drained.locked(session, device_uuid)
        _check_partitionable(device)
        return drained.drain(session, device, TYPE, 'changing its MIG layout',
                             project_id, conductor_uuid, {'layout': layout},
                             {'layout': layout})


def _check_partitionable(device):
    info = _vendor_board_info(device)
    if device.type != 'GPU' or info.get('mig_mode') in (None, 'unsupported'):
        raise exception.Conflict(
            'Device %s (%s %s) does not support MIG; only GPUs whose agent '
            'reports a MIG mode take a MIG layout.'
            % (device.uuid, device.type, device.model))


def _vendor_board_info(device):
    try:
        info = json.loads(device.vendor_board_info or '{}')
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}
