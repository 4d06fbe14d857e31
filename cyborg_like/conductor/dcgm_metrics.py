"""GPU series under NVIDIA dcgm-exporter's names and labels
(docs/metrics.md, "dcgm-exporter names").

Why its labels with its values: an operator who already runs dcgm-exporter
has dashboards and recording rules keyed on ``UUID`` (the GPU's ``GPU-...``
uuid), ``gpu`` (the NVML index), ``device`` (``nvidia<minor>``),
``modelName``, ``Hostname`` and, for MIG instances, ``GPU_I_ID`` and
``GPU_I_PROFILE``; with the same values our series join theirs on ``UUID``
and their queries read ours unchanged. Two labels of our own,
``device_uuid`` and ``project_id`` (of the holder of a bound accelerator
request), let a query join the rest of cyborg_like's series and bill.

The values come from the agent: the nvidia_gpu driver reports ``uuid``,
``index`` and ``minor`` in vendor_board_info, and each MIG reading its
``gpu_instance_id``. A device without them (an older agent, another
driver) keeps today's values: our device uuid, and the GPU's place on
its host by PCI address for ``gpu`` and ``device``.
"""

import re

from prometheus_client import core

LABELS = ['gpu', 'UUID', 'pci_bus_id', 'device', 'modelName',
          'GPU_I_PROFILE', 'GPU_I_ID', 'Hostname', 'DCGM_FI_DRIVER_VERSION',
          'device_uuid', 'project_id']

_MIB = 1048576.0


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _mib(value):
    return None if _number(value) is None else value / _MIB


def _free_mib(reading):
    total = _number(reading.get('memory_total_bytes'))
    used = _number(reading.get('memory_used_bytes'))
    if total is None or used is None:
        return None
    return max(0, total - used) / _MIB


# (series, help as dcgm-exporter writes it, value of a reading, per MIG
# instance too). The reading is the device's utilization (or one MIG
# instance's) as the agent last reported it.
FIELDS = (
    ('DCGM_FI_DEV_GPU_UTIL', 'GPU utilization (in %).',
     lambda r: r.get('gpu_percent'), False),
    ('DCGM_FI_DEV_MEM_COPY_UTIL', 'Memory utilization (in %).',
     lambda r: r.get('memory_percent'), False),
    ('DCGM_FI_DEV_FB_USED', 'Framebuffer memory used (in MiB).',
     lambda r: _mib(r.get('memory_used_bytes')), True),
    ('DCGM_FI_DEV_FB_FREE', 'Framebuffer memory free (in MiB).',
     _free_mib, True),
    ('DCGM_FI_DEV_GPU_TEMP', 'GPU temperature (in C).',
     lambda r: r.get('temperature_c'), False),
    ('DCGM_FI_DEV_POWER_USAGE', 'Power draw (in W).',
     lambda r: r.get('power_w'), False),
    ('DCGM_FI_DEV_XID_ERRORS', 'Value of the last XID error encountered.',
     lambda r: r.get('last_xid'), False),
    ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'Total number of double-bit '
     'volatile ECC errors.',
     lambda r: r.get('ecc_uncorrected_volatile'), False),
    ('DCGM_FI_DEV_ECC_DBE_AGG_TOTAL', 'Total number of double-bit '
     'persistent ECC errors.',
     lambda r: r.get('ecc_uncorrected_aggregate'), False),
    ('DCGM_FI_DEV_SM_CLOCK', 'SM clock frequency (in MHz).',
     lambda r: r.get('sm_clock_mhz'), False),
    ('DCGM_FI_DEV_MEM_CLOCK', 'Memory clock frequency (in MHz).',
     lambda r: r.get('memory_clock_mhz'), False),
)

# NVML's "00000000:AF:00.0" from the PCI address we keep ("0000:af:00.0").
_ADDRESS = re.compile(r'^([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})'
                      r'\.([0-7])$')


def pci_bus_id(address):
    """``'0000:af:00.0'`` -> ``'00000000:AF:00.0'``, the form NVML and
    dcgm-exporter write; anything else is left as it is."""
    match = _ADDRESS.match(address or '')
    if not match:
        return address or ''
    domain, bus, slot, function = match.groups()
    return '%08X:%s:%s.%s' % (int(domain, 16), bus.upper(), slot.upper(),
                              function)


def families(devices, holders):
    """The dcgm-exporter series of the GPUs among ``devices`` (the fleet
    snapshot, db/metrics.py), ``holders`` {device id: [(project,
    instance)]} of the bound accelerator requests."""
    out = [core.GaugeMetricFamily(name, text, labels=LABELS)
           for name, text, _get, _mig in FIELDS]
    place = {}
    for device in devices:
        if device['type'] != 'GPU':
            continue
        order = place[device['hostname']] = place.get(
            device['hostname'], -1) + 1
        gpu = identity(device, order, holders.get(device['id'], ()))
        utilization = device['utilization']
        for family, (_n, _t, get, _mig) in zip(out, FIELDS):
            _add(family, gpu, '', '', get(utilization))
        for mig in _migs(utilization):
            for family, (_n, _t, get, per_mig) in zip(out, FIELDS):
                if per_mig:
                    _add(family, gpu, mig.get('profile') or '',
                         str(mig['gpu_instance_id']), get(mig))
    return out


def identity(device, order, held):
    """{label: value} of a GPU but for GPU_I_*: what the agent reported,
    else the fallback (``order``: the GPU's place on its host)."""
    board = device.get('vendor_board_info')
    board = board if isinstance(board, dict) else {}
    index = _whole(board.get('index'))
    minor = _whole(board.get('minor'))
    index = order if index is None else index
    return {'gpu': str(index),
            'UUID': str(board.get('uuid') or device['uuid']),
            'pci_bus_id': pci_bus_id(device.get('pci_address')),
            'device': 'nvidia%d' % (index if minor is None else minor),
            'modelName': device['model'] or '',
            'Hostname': device['hostname'],
            'DCGM_FI_DRIVER_VERSION': str(board.get('driver_version') or ''),
            'device_uuid': device['uuid'],
            'project_id': ','.join(sorted({p for p, _i in held if p}))}


def _whole(value):
    """A non-negative integer of the agent's report, or None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _migs(utilization):
    """The MIG readings that name their GPU instance (an older agent's do
    not: their series would not be told apart, so none is made)."""
    readings = utilization.get('mig_devices')
    if not isinstance(readings, dict):
        return []
    return [reading for _uuid, reading in sorted(readings.items())
            if isinstance(reading, dict)
            and _whole(reading.get('gpu_instance_id')) is not None]


def _add(family, gpu, profile, instance, value):
    value = _number(value)
    if value is None:
        return
    labels = dict(gpu, GPU_I_PROFILE=profile, GPU_I_ID=instance)
    family.add_metric([labels[name] for name in LABELS], value)
