"""Applying a MIG layout to a GPU through NVML, as nvidia-smi mig does.

A layout is the list of GPU-instance profile names the operator wants
(``["3g.40gb", "4g.40gb"]``, ``["1g.10gb"] * 7``); the empty list is the
whole GPU (MIG mode off). Each profile becomes one GPU instance holding one
compute instance over all of its slices: one MIG device, as the operator
would get from ``nvidia-smi mig -cgi <profiles> -C``.

Applying is all or nothing from the caller's side: the layout is checked
against the profiles the GPU offers before anything is destroyed, and a
creation that fails half way puts the layout that was there back (best
effort) before raising. Nothing here knows about bindings: the conductor
drains the device and refuses while anything is bound to it.
"""

import ctypes
import math
import re

from oslo_log import log as logging
import pynvml

from cyborg_like.drivers.nvidia_gpu import nvml

LOG = logging.getLogger(__name__)

_PROFILE_NAME = re.compile(r'(\d+g\.\d+gb(?:\+\w+)?)')
# A compute instance over a whole GPU instance: its profile by slice count.
_COMPUTE_PROFILE_BY_SLICES = {
    1: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
    2: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
    3: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
    4: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
    6: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE,
    7: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
    8: pynvml.NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE,
}
_ABSENT = (pynvml.NVMLError_NotSupported, pynvml.NVMLError_InvalidArgument)


class MigLayoutError(Exception):
    """The layout cannot be applied; the message says why in words an
    operator can act on."""


def offered_profiles(gpu_handle):
    """``{profile name: GPU-instance profile info}`` of this GPU; empty
    when it is not MIG capable."""
    offered = {}
    for index in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        info = _profile_info(gpu_handle, index)
        if info is not None:
            offered.setdefault(_name(info), info)
    return offered


def current_layout(gpu_handle):
    """The profile names of the GPU's MIG devices now, largest first; []
    with MIG mode off."""
    if not nvml.mig_enabled(gpu_handle):
        return []
    return largest_first(mig.profile or 'unknown'
                         for mig in nvml.migs(gpu_handle))


def largest_first(names):
    """Profile names by slices, most first ("7g.80gb" before "1g.10gb"),
    then by name: the order layouts are shown and created in."""
    def slices(name):
        found = re.match(r'(\d+)g\.', name)
        return int(found.group(1)) if found else 0
    return sorted(names, key=lambda name: (-slices(name), name))


def apply(gpu_handle, layout):
    """Make the GPU's MIG devices exactly ``layout``; returns the layout
    now in place. Raises MigLayoutError."""
    layout = list(layout)
    offered = offered_profiles(gpu_handle) if layout else {}
    _check(layout, offered)
    if not layout:
        if nvml.mig_enabled(gpu_handle):
            _destroy_all(gpu_handle)
            _set_mig_mode(gpu_handle, pynvml.NVML_DEVICE_MIG_DISABLE)
        return []
    _set_mig_mode(gpu_handle, pynvml.NVML_DEVICE_MIG_ENABLE)
    before = current_layout(gpu_handle)
    _destroy_all(gpu_handle)
    try:
        _create(gpu_handle, largest_first(layout), offered)
    except pynvml.NVMLError as error:
        _put_back(gpu_handle, before, offered)
        raise MigLayoutError(
            'NVML refused to create the layout %s (%s); the layout before '
            '(%s) was put back' % (' + '.join(layout), error,
                                   ' + '.join(before) or 'none'))
    return current_layout(gpu_handle)


def _check(layout, offered):
    unknown = sorted(set(layout) - set(offered))
    if unknown:
        raise MigLayoutError(
            'the GPU offers no MIG profile %s (it offers %s)'
            % (', '.join(unknown), ', '.join(sorted(offered)) or 'none: '
               'it is not MIG capable'))
    if not layout:
        return
    slices = sum(offered[name].sliceCount for name in layout)
    whole = max(info.sliceCount for info in offered.values())
    if slices > whole:
        raise MigLayoutError(
            'the layout %s needs %d compute slices; the GPU has %d'
            % (' + '.join(layout), slices, whole))
    for name in set(layout):
        wanted, most = layout.count(name), offered[name].instanceCount
        if wanted > most:
            raise MigLayoutError('the GPU makes at most %d instance(s) of '
                                 '%s, not %d' % (most, name, wanted))


def _set_mig_mode(gpu_handle, mode):
    current, _pending = pynvml.nvmlDeviceGetMigMode(gpu_handle)
    if current == mode:
        return
    status = pynvml.nvmlDeviceSetMigMode(gpu_handle, mode)
    current, pending = pynvml.nvmlDeviceGetMigMode(gpu_handle)
    if current != mode:
        word = 'on' if mode == pynvml.NVML_DEVICE_MIG_ENABLE else 'off'
        raise MigLayoutError(
            'MIG mode %s is pending until the GPU is reset (NVML status '
            '%s, pending mode %s): reset it (nvidia-smi -r) or reboot the '
            'host, then apply the layout again' % (word, status, pending))


def _create(gpu_handle, layout, offered):
    for name in layout:
        info = offered[name]
        gpu_instance = pynvml.nvmlDeviceCreateGpuInstance(gpu_handle,
                                                          info.id)
        compute = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gpu_instance, _COMPUTE_PROFILE_BY_SLICES[info.sliceCount],
            pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        pynvml.nvmlGpuInstanceCreateComputeInstance(gpu_instance, compute.id)
        LOG.info('Created MIG device %s', name)


def _put_back(gpu_handle, before, offered):
    try:
        _destroy_all(gpu_handle)
        _create(gpu_handle, [name for name in before if name in offered],
                offered)
    except pynvml.NVMLError as error:
        LOG.error('Putting the MIG layout %s back failed too (%s): the GPU '
                  'is left with what NVML shows now', ' + '.join(before),
                  error)


def _destroy_all(gpu_handle):
    if not nvml.mig_enabled(gpu_handle):
        return
    for info in offered_profiles(gpu_handle).values():
        for gpu_instance in _gpu_instances(gpu_handle, info):
            for compute in _compute_instances(gpu_instance):
                pynvml.nvmlComputeInstanceDestroy(compute)
            pynvml.nvmlGpuInstanceDestroy(gpu_instance)


def _gpu_instances(gpu_handle, info):
    found = (pynvml.c_nvmlGpuInstance_t * max(info.instanceCount, 1))()
    count = ctypes.c_uint()
    pynvml.nvmlDeviceGetGpuInstances(gpu_handle, info.id, found,
                                     ctypes.byref(count))
    return found[:count.value]


def _compute_instances(gpu_instance):
    found = []
    for index in range(pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
        try:
            info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gpu_instance, index,
                pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        except _ABSENT:
            continue
        instances = (pynvml.c_nvmlComputeInstance_t
                     * max(info.instanceCount, 1))()
        count = ctypes.c_uint()
        pynvml.nvmlGpuInstanceGetComputeInstances(
            gpu_instance, info.id, instances, ctypes.byref(count))
        found += instances[:count.value]
    return found


def _profile_info(gpu_handle, index):
    try:
        return pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu_handle, index)
    except pynvml.NVMLError_FunctionNotFound:
        pass                # before R470: the v1 struct, without a name
    except _ABSENT:
        return None
    try:
        return pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu_handle, index,
                                                          version=1)
    except _ABSENT:
        return None


def _name(info):
    """"3g.40gb" from NVML's "MIG 3g.40gb"; the v1 struct has no name, so
    it is made from slices and memory as nvidia-smi shows it."""
    name = getattr(info, 'name', b'')
    if isinstance(name, bytes):
        name = name.decode('utf-8', 'replace')
    found = _PROFILE_NAME.search(name or '')
    if found:
        return found.group(1)
    return '%dg.%dgb' % (info.sliceCount, math.ceil(info.memorySizeMB / 1024))
