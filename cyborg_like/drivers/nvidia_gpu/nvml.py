"""Everything the driver reads from NVML, returned as plain data.

All pynvml calls of the driver are in this module, so the fake
libnvidia-ml.so.1 of tests/hardware/nvml has to export only what these
functions reach. Queries a GPU may legitimately not support (NUMA node on
older drivers, ECC on cards without it, utilization in MIG mode) come back as
None, and so do functions an older libnvidia-ml does not export
(FunctionNotFound): each switches off only the feature that needs it. Where
NVML has an older function for a reading (temperature, memory) it is asked
when the newer one is missing or answers NOT_SUPPORTED (an older driver or
GPU behind a newer library exports it all the same).
Every other NVML error propagates, GPU_IS_LOST included, so the caller
decides about the device as a whole.
"""

import contextlib
import ctypes
import dataclasses
import re

from oslo_log import log as logging
import pynvml

LOG = logging.getLogger(__name__)

# "NVIDIA H100 80GB HBM3 MIG 1g.10gb" -> "1g.10gb" (also "1g.10gb+me").
_MIG_PROFILE = re.compile(r'\bMIG\s+(\S+)$')
# NVML writes bus ids as "00000000:AF:00.0": 8-digit domain, upper case.
_BUS_ID = re.compile(r'^([0-9A-Fa-f]+):([0-9A-Fa-f]+):([0-9A-Fa-f]+)\.'
                     r'([0-7])$')


@dataclasses.dataclass
class Mig:
    uuid: str
    name: str
    profile: str | None         # "1g.10gb", None if the name has none
    gpu_instance_id: int
    compute_instance_id: int
    memory_total: int
    memory_used: int = 0


@dataclasses.dataclass
class Gpu:
    index: int
    name: str
    uuid: str
    address: str                # sysfs form: 0000:af:00.0
    vendor_id: int
    device_id: int
    subsystem_id: int
    memory_total: int
    numa_node: int | None       # None when NVML cannot tell
    mig_enabled: bool | None    # None when the GPU has no MIG
    migs: list = dataclasses.field(default_factory=list)
    # N of /dev/nvidiaN (dcgm-exporter's ``device`` label); None when
    # NVML cannot tell.
    minor: int | None = None


# The health checks that need a query a GPU or driver may lack, by the
# name a reading lists them under when they could not be made.
CHECK_ECC = 'ecc_uncorrected'
CHECK_MEMORY_REPAIR = 'memory_repair'     # retired pages / remapped rows
CHECK_TEMPERATURE = 'temperature'


@dataclasses.dataclass
class Reading:
    """One health sample of a GPU; None where the GPU does not say."""
    gpu_percent: int | None
    memory_percent: int | None   # time the memory was busy, not capacity
    memory_used: int
    memory_total: int
    temperature: int | None
    power_mw: int | None
    ecc_uncorrected: int | None  # volatile: since the driver loaded
    retired_pages_pending: bool | None
    remapped_rows_pending: bool | None
    remapped_rows_failure: bool | None
    # Read for the metrics only (dcgm-exporter's fields), never judged:
    ecc_uncorrected_aggregate: int | None = None   # over the GPU's life
    sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    # CHECK_* names of the health checks this GPU or driver cannot make.
    unchecked: list = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def session():
    """nvmlInit ... nvmlShutdown around a block of queries.

    NVML counts its initialisations, so a session never disturbs another
    user of NVML in the process; and initialising again each time picks up
    GPUs that appeared or were reset since the last time.
    """
    pynvml.nvmlInit()
    try:
        yield
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError as exc:
            LOG.warning('nvmlShutdown failed: %s', exc)


def system_versions():
    """(driver version, CUDA version) of this host, as text."""
    cuda = pynvml.nvmlSystemGetCudaDriverVersion()    # e.g. 12040
    return (pynvml.nvmlSystemGetDriverVersion(),
            '%d.%d' % (cuda // 1000, cuda % 1000 // 10))


def device_count():
    return pynvml.nvmlDeviceGetCount()


def handle(index):
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def handle_by_uuid(gpu_uuid):
    """Raises NVMLError_GpuIsLost for a GPU on the bus that does not
    answer, NVMLError_NotFound for one no longer on it."""
    return pynvml.nvmlDeviceGetHandleByUUID(gpu_uuid.encode())


def uuid(gpu_handle):
    return pynvml.nvmlDeviceGetUUID(gpu_handle)


def address(gpu_handle):
    """The GPU's PCI address in the form sysfs and Cyborg use."""
    return _sysfs_address(pynvml.nvmlDeviceGetPciInfo(gpu_handle))


def _sysfs_address(pci):
    """busId ``'00000000:AF:00.0'`` -> ``'0000:af:00.0'``."""
    bus_id = pci.busId                  # pynvml's structs decode to str
    match = _BUS_ID.match(bus_id)
    if not match:
        raise ValueError('unexpected NVML bus id %r' % bus_id)
    domain, bus, device, function = (int(part, 16)
                                     for part in match.groups())
    return '%04x:%02x:%02x.%x' % (domain, bus, device, function)


def read_gpu(index):
    """Identity, memory, NUMA node and MIG devices of GPU ``index``."""
    gpu_handle = handle(index)
    pci = pynvml.nvmlDeviceGetPciInfo(gpu_handle)
    mig_on = mig_enabled(gpu_handle)
    return Gpu(
        index=index,
        name=pynvml.nvmlDeviceGetName(gpu_handle),
        uuid=pynvml.nvmlDeviceGetUUID(gpu_handle),
        address=_sysfs_address(pci),
        vendor_id=pci.pciDeviceId & 0xffff,
        device_id=pci.pciDeviceId >> 16,
        subsystem_id=pci.pciSubSystemId,
        memory_total=_memory(gpu_handle).total,
        numa_node=_numa_node(gpu_handle),
        mig_enabled=mig_on,
        migs=migs(gpu_handle) if mig_on else [],
        minor=_optional(pynvml.nvmlDeviceGetMinorNumber, gpu_handle))


def read_health(gpu_handle):
    utilization = _optional(pynvml.nvmlDeviceGetUtilizationRates, gpu_handle)
    memory = _memory(gpu_handle)
    remapped = _optional(pynvml.nvmlDeviceGetRemappedRows, gpu_handle)
    retired = _optional(pynvml.nvmlDeviceGetRetiredPagesPendingStatus,
                        gpu_handle)
    temperature = _temperature(gpu_handle)
    ecc = _optional(pynvml.nvmlDeviceGetTotalEccErrors, gpu_handle,
                    pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                    pynvml.NVML_VOLATILE_ECC)
    unchecked = [name for name, missing in (
        (CHECK_ECC, ecc is None),
        # A GPU retires pages (before Ampere) or remaps rows (Ampere on):
        # one of the two is enough.
        (CHECK_MEMORY_REPAIR, retired is None and remapped is None),
        (CHECK_TEMPERATURE, temperature is None)) if missing]
    return Reading(
        gpu_percent=utilization.gpu if utilization else None,
        memory_percent=utilization.memory if utilization else None,
        memory_used=memory.used,
        memory_total=memory.total,
        temperature=temperature,
        power_mw=_optional(pynvml.nvmlDeviceGetPowerUsage, gpu_handle),
        ecc_uncorrected=ecc,
        retired_pages_pending=None if retired is None else bool(retired),
        # (corrected, uncorrected, pending, failure): Ampere and later
        # remap rows where older GPUs retired pages.
        remapped_rows_pending=None if remapped is None else bool(remapped[2]),
        remapped_rows_failure=None if remapped is None else bool(remapped[3]),
        ecc_uncorrected_aggregate=_optional(
            pynvml.nvmlDeviceGetTotalEccErrors, gpu_handle,
            pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
            pynvml.NVML_AGGREGATE_ECC),
        sm_clock_mhz=_optional(pynvml.nvmlDeviceGetClockInfo, gpu_handle,
                               pynvml.NVML_CLOCK_SM),
        memory_clock_mhz=_optional(pynvml.nvmlDeviceGetClockInfo,
                                   gpu_handle, pynvml.NVML_CLOCK_MEM),
        unchecked=unchecked)


def _optional(function, *args):
    """``function(*args)``, or None if this GPU or driver lacks it."""
    try:
        return function(*args)
    except (pynvml.NVMLError_NotSupported,
            pynvml.NVMLError_FunctionNotFound):
        return None


# What a newer query answers where the driver or the GPU only knows the
# older one: the function missing from an older library, or exported and
# answering NOT_SUPPORTED (an older driver or GPU behind a newer library),
# or a versioned struct it does not take.
_NEWER_UNANSWERED = (pynvml.NVMLError_FunctionNotFound,
                     pynvml.NVMLError_NotSupported,
                     pynvml.NVMLError_ArgumentVersionMismatch)


def _newer_or_older(newer, older):
    """``newer()``, or ``older()`` where the newer query is unanswered."""
    try:
        return newer()
    except _NEWER_UNANSWERED:
        return older()


def _temperature(gpu_handle):
    # nvmlDeviceGetTemperature is deprecated from R570 on, kept by NVML.
    return _newer_or_older(
        lambda: pynvml.nvmlDeviceGetTemperatureV(
            gpu_handle, pynvml.NVML_TEMPERATURE_GPU),
        lambda: _optional(pynvml.nvmlDeviceGetTemperature, gpu_handle,
                          pynvml.NVML_TEMPERATURE_GPU))


def _memory(any_handle):
    # The v2 struct: v1 counts the memory the driver reserves as used,
    # which is all a driver before R510 can say.
    return _newer_or_older(
        lambda: pynvml.nvmlDeviceGetMemoryInfo(
            any_handle, version=pynvml.nvmlMemory_v2),
        lambda: pynvml.nvmlDeviceGetMemoryInfo(any_handle))


def _numa_node(gpu_handle):
    node = _optional(pynvml.nvmlDeviceGetNumaNodeId, gpu_handle)
    return node if node is not None and node >= 0 else None


def vgpu_max_instances(gpu_index, type_id):
    """The most vGPUs of ``type_id`` (``nvidia-<ID>``, NVML's vGPU type
    id) one GPU makes, as nvidia-smi vgpu says; None where NVML cannot
    tell (no vGPU manager, a type this GPU does not make)."""
    number = type_id.removeprefix('nvidia-')
    if not number.isdigit():
        return None
    try:
        return pynvml.nvmlVgpuTypeGetMaxInstances(handle(gpu_index),
                                                  int(number))
    except (pynvml.NVMLError_NotSupported, pynvml.NVMLError_FunctionNotFound,
            pynvml.NVMLError_InvalidArgument):
        return None


def mig_enabled(gpu_handle):
    modes = _optional(pynvml.nvmlDeviceGetMigMode, gpu_handle)
    if modes is None:
        return None
    return modes[0] == pynvml.NVML_DEVICE_MIG_ENABLE


def migs(gpu_handle):
    """The MIG devices (GPU instance + compute instance) of a GPU."""
    found = []
    for slot in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(gpu_handle)):
        try:
            mig_handle = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(
                gpu_handle, slot)
        except pynvml.NVMLError_NotFound:
            continue                    # slots need not be contiguous
        found.append(_mig(mig_handle))
    return found


def _mig(mig_handle):
    name = pynvml.nvmlDeviceGetName(mig_handle)
    memory = _memory(mig_handle)
    profile = _MIG_PROFILE.search(name)
    return Mig(
        uuid=pynvml.nvmlDeviceGetUUID(mig_handle),
        name=name,
        profile=profile.group(1) if profile else None,
        gpu_instance_id=pynvml.nvmlDeviceGetGpuInstanceId(mig_handle),
        compute_instance_id=pynvml.nvmlDeviceGetComputeInstanceId(mig_handle),
        memory_total=memory.total, memory_used=memory.used)


# -- events (events.py listens to them) ---------------------------------------

# The NVML event types the health watcher registers.
EVENT_XID = pynvml.nvmlEventTypeXidCriticalError
EVENT_DOUBLE_BIT_ECC = pynvml.nvmlEventTypeDoubleBitEccError


@dataclasses.dataclass
class Event:
    gpu: int            # handle_key() of the GPU it happened on
    type: int           # an EVENT_* value
    data: int           # the Xid number of an EVENT_XID, else 0


def handle_key(gpu_handle):
    """A number naming a GPU handle: an event's device is the same handle
    the set was registered with, and a lost GPU may not say its uuid."""
    return ctypes.cast(gpu_handle, ctypes.c_void_p).value


def event_set():
    return pynvml.nvmlEventSetCreate()


def register_events(gpu_handle, types, events):
    """Register those of ``types`` the GPU supports on ``events``; return
    them (0: none). NotSupported or FunctionNotFound propagate: a GPU or
    driver without events."""
    wanted = types & pynvml.nvmlDeviceGetSupportedEventTypes(gpu_handle)
    if wanted:
        pynvml.nvmlDeviceRegisterEvents(gpu_handle, wanted, events)
    return wanted


def wait_event(events, timeout_ms):
    """The next event of the set, or None when none came within
    ``timeout_ms``."""
    try:
        data = pynvml.nvmlEventSetWait(events, timeout_ms)
    except pynvml.NVMLError_Timeout:
        return None
    return Event(handle_key(data.device), data.eventType, data.eventData)


def free_event_set(events):
    pynvml.nvmlEventSetFree(events)
