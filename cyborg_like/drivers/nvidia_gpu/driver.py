"""NVIDIA GPUs through NVML (pynvml): inventory, health and attach.

One GPU becomes one :class:`base.Device` whose control path is its PCI
address, with these deployables:

``<gpu uuid>`` (rc PGPU)
    The whole GPU, with a PCI attach handle. It offers 0 accelerators while
    the GPU is partitioned (MIG mode on, or vGPU types offered), so the same
    silicon is never offered twice.
``<gpu uuid>-mig-<gpu instance>-<compute instance>`` (rc CUSTOM_MIG_<PROFILE>)
    One per MIG device when MIG mode is on. Its single attach handle is of
    type MIG and carries the MIG uuid, which is what CUDA and container
    runtimes take; never MDEV, which a VM consumer (Nova's libvirt driver)
    would attach as a mediated device of that uuid, which does not exist.
    A MIG slice reaches a VM only as a MIG-backed vGPU type (below): while
    the GPU offers one, its MIG devices back those vGPUs and offer 0
    accelerators themselves. MIG devices are made when the operator
    applies a layout (``apply_mig_layout``, mig.py, asked through the API
    on a drained GPU) or by hand (nvidia-smi mig -cgi/-cci); preparing the
    handle creates nothing. They live in the GPU until it is reset, so an
    agent restart finds them as they were.
``<gpu uuid>-vgpu-<type>`` (rc VGPU)
    The one vGPU type the operator enabled for this GPU, when the GPU
    offers it: one handle per vGPU the GPU can make (an mdev, or a VF in
    NVIDIA's vendor-specific interface), made when the handle is prepared
    and removed when it is released. vgpu.py says which type a GPU offers
    and how many, and makes them.

GPU errors reach the agent as they happen (``watch_health``, events.py):
a fatal Xid or a double-bit ECC error makes the GPU's readings unhealthy
for ``[nvidia_gpu] fatal_xid_hold`` seconds; every GPU's last Xid is in its
readings' utilization (``last_xid``).

Without NVML on the host (no NVIDIA driver) the driver reports nothing and
says so once. A GPU that stops answering NVML (GPU_IS_LOST) is kept as last
seen in the inventory and reported unhealthy; the other GPUs carry on.
"""

import re

from oslo_log import log as logging
import pynvml

from cyborg_like.common import exception
from cyborg_like.drivers import base
from cyborg_like.drivers.nvidia_gpu import events
from cyborg_like.drivers.nvidia_gpu import mig
from cyborg_like.drivers.nvidia_gpu import nvml
from cyborg_like.drivers.nvidia_gpu import sysfs
from cyborg_like.drivers.nvidia_gpu import vgpu
from cyborg_like.drivers import pci

LOG = logging.getLogger(__name__)


class NvidiaGPUDriver(base.AcceleratorDriver, base.HealthReporting,
                      base.HealthWatching, base.AttachPreparing,
                      base.MigPartitioning):
    name = 'nvidia_gpu'

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = sysfs.Sysfs(conf.nvidia_gpu.sysfs_root)
        self._vgpus = vgpu.Vgpus(self.sysfs, self.name)
        # GPU uuid -> the Device last read from it. Keeps a GPU that stops
        # answering in the inventory, and tells health() which one it is.
        # Not keyed by NVML index: indexes shift when a GPU leaves the bus.
        self._last_seen = {}
        self._said_no_library = False
        # Fatal NVML events held per GPU, and each GPU's last Xid.
        self._latch = events.Latch(conf.nvidia_gpu.fatal_xid_hold)
        self._listener = None

    # -- inventory ---------------------------------------------------------

    def discover(self):
        def work():
            versions = nvml.system_versions()
            enabled = vgpu.enabled_types(self.conf)
            found, silent = {}, False
            for index in range(nvml.device_count()):
                try:
                    gpu = nvml.read_gpu(index)
                except pynvml.NVMLError as exc:
                    LOG.error('NVIDIA GPU %d does not answer NVML (%s)',
                              index, exc)
                    silent = True
                    continue
                found[gpu.uuid] = self._device(gpu, versions,
                                               enabled(gpu.address))
            kept = ([device for device, _ in self._lost(set(found))]
                    if silent else [])
            if silent and not kept:
                LOG.error('No GPU seen before is lost: leaving it out')
            self._last_seen = dict(found, **{_uuid_of(d): d for d in kept})
            return list(found.values()) + kept
        return self._with_nvml(work)

    def _lost(self, answered):
        """``[(Device, error)]`` of the GPUs seen before that did not answer
        now and that NVML says are lost (on the bus, unreachable): kept as
        last seen. Those NVML no longer knows have left the bus and go."""
        kept = []
        for gpu_uuid, device in sorted(self._last_seen.items()):
            if gpu_uuid in answered:
                continue
            try:
                nvml.handle_by_uuid(gpu_uuid)
            except pynvml.NVMLError_GpuIsLost as exc:
                LOG.error('NVIDIA GPU %s (%s) is lost; keeping it as last '
                          'seen', gpu_uuid, _address_of(device))
                kept.append((device, exc))
            except pynvml.NVMLError as exc:
                LOG.warning('NVIDIA GPU %s (%s) is gone from NVML (%s)',
                            gpu_uuid, _address_of(device), exc)
            else:
                # Answering again since it was read a moment ago.
                kept.append((device, None))
        return kept

    def _device(self, gpu, versions, wanted_type):
        offer = self._vgpus.offered(gpu, wanted_type)
        partitioned = bool(gpu.mig_enabled or offer)
        # With a vGPU type offered the MIG devices back vGPUs (MIG-backed
        # types), so they are not handed to containers beside them.
        deployables = ([self._pgpu(gpu, partitioned)]
                       + [self._mig(gpu, mig, offered=offer is None)
                          for mig in gpu.migs]
                       + ([self._vgpu(gpu, offer)] if offer else []))
        return base.Device(
            type='GPU', vendor='0x%04x' % gpu.vendor_id, model=gpu.name,
            controlpath_id=pci.controlpath_id(gpu.address),
            deployables=deployables,
            std_board_info=self._std_board_info(gpu),
            vendor_board_info=_vendor_board_info(gpu, versions))

    def _std_board_info(self, gpu):
        info = {'vendor_id': '0x%04x' % gpu.vendor_id,
                'product_id': '0x%04x' % gpu.device_id,
                'subsystem_id': '0x%08x' % gpu.subsystem_id,
                'pci_address': gpu.address}
        numa_node = gpu.numa_node
        if numa_node is None:           # older drivers: ask the kernel
            numa_node = self.sysfs.numa_node(gpu.address)
        if numa_node is not None:
            info['numa_node'] = numa_node
        return info

    def _pgpu(self, gpu, partitioned):
        return base.Deployable(
            name=gpu.uuid, driver_name=self.name,
            num_accelerators=0 if partitioned else 1,
            attributes={'rc': 'PGPU', **_gpu_traits(gpu)},
            attach_handles=[pci.attach_handle(gpu.address)])

    def _mig(self, gpu, mig, offered=True):
        ids = (str(mig.gpu_instance_id), str(mig.compute_instance_id))
        rc = 'CUSTOM_MIG_%s' % _custom(mig.profile or 'unknown profile')
        info = {'mig_uuid': mig.uuid, 'gpu_instance_id': ids[0],
                'compute_instance_id': ids[1], 'profile': mig.profile or ''}
        return base.Deployable(
            name='%s-mig-%s-%s' % (gpu.uuid, *ids), driver_name=self.name,
            num_accelerators=1 if offered else 0,
            attributes={'rc': rc, **_gpu_traits(gpu),
                        'trait3': 'CUSTOM_GPU_MIG_%s' % _custom(
                            mig.profile or 'unknown profile')},
            attach_handles=[base.AttachHandle('MIG', info)])

    def _vgpu(self, gpu, offer):
        return base.Deployable(
            name='%s-vgpu-%s' % (gpu.uuid, offer.type_id),
            driver_name=self.name, num_accelerators=len(offer.handles),
            attributes={'rc': 'VGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
                        'trait1': 'CUSTOM_VGPU_' + _custom(
                            offer.name or offer.type_id)},
            attach_handles=offer.handles)

    # -- health ------------------------------------------------------------

    def health(self):
        def work():
            found, answered, silent = [], set(), False
            for index in range(nvml.device_count()):
                try:
                    gpu_uuid, health = self._health_one(index)
                except pynvml.NVMLError as exc:
                    LOG.error('NVIDIA GPU %d does not answer NVML (%s)',
                              index, exc)
                    silent = True
                    continue
                answered.add(gpu_uuid)
                found.append(health)
            if silent:
                found += [self._unreachable(device, error)
                          for device, error in self._lost(answered)
                          if error is not None]
            return found
        return self._with_nvml(work)

    def watch_health(self, on_change):
        if self._listener is not None and self._listener.alive:
            return
        self._listener = events.Listener(self._latch, on_change)
        self._listener.start()

    def stop_watching(self):
        if self._listener is not None:
            self._listener.stop()
            self._listener = None

    def _events_of(self, gpu_uuid, reasons, utilization):
        """Add the held fatal events and the last Xid of the GPU."""
        reasons += self._latch.reasons(gpu_uuid)
        last_xid = self._latch.last_xid(gpu_uuid)
        if last_xid is not None:
            utilization['last_xid'] = last_xid

    def _unreachable(self, device, error):
        reasons = ['NVML cannot reach the GPU: %s' % error]
        utilization = {}
        self._events_of(_uuid_of(device), reasons, utilization)
        return base.DeviceHealth(device.controlpath_id, healthy=False,
                                 reasons=reasons, utilization=utilization)

    def _health_one(self, index):
        gpu_handle = nvml.handle(index)
        controlpath = pci.controlpath_id(nvml.address(gpu_handle))
        gpu_uuid = nvml.uuid(gpu_handle)
        reading = nvml.read_health(gpu_handle)
        reasons = self._verdict(reading)
        utilization = _utilization(reading)
        self._events_of(gpu_uuid, reasons, utilization)
        if nvml.mig_enabled(gpu_handle):
            # What NVML tells of each slice: its memory. ECC, memory
            # repair and temperature are the whole GPU's, judged above.
            utilization['mig_devices'] = {
                mig_device.uuid: {'profile': mig_device.profile,
                                  'gpu_instance_id':
                                      mig_device.gpu_instance_id,
                                  'memory_used_bytes': mig_device.memory_used,
                                  'memory_total_bytes':
                                      mig_device.memory_total}
                for mig_device in nvml.migs(gpu_handle)}
        return gpu_uuid, base.DeviceHealth(
            controlpath, healthy=not reasons, reasons=reasons,
            utilization=utilization, unchecked=reading.unchecked)

    def _verdict(self, reading):
        threshold = self.conf.nvidia_gpu.temperature_threshold
        hot = reading.temperature is not None and \
            reading.temperature > threshold
        checks = [
            (reading.ecc_uncorrected,
             '%s uncorrectable ECC error(s) since the driver loaded'
             % reading.ecc_uncorrected),
            (reading.retired_pages_pending,
             'retired memory pages are pending: reset the GPU'),
            (reading.remapped_rows_pending,
             'memory row remapping is pending: reset the GPU'),
            (reading.remapped_rows_failure,
             'memory row remapping failed: the GPU needs service'),
            (hot, 'temperature %s C is above the %d C threshold'
             % (reading.temperature, threshold)),
        ]
        return [reason for failed, reason in checks if failed]

    # -- attach handles ----------------------------------------------------

    def prepare_attach_handle(self, controlpath_id, attach_handle):
        attach_type, info = base.unpack_handle(attach_handle)
        if vgpu.is_vgpu(attach_type, info):
            return self._vgpus.prepare(controlpath_id, attach_type, info)
        return info         # a PCI function or MIG device: exists already

    def release_attach_handle(self, controlpath_id, attach_handle):
        attach_type, info = base.unpack_handle(attach_handle)
        if vgpu.is_vgpu(attach_type, info):
            self._vgpus.release(controlpath_id, attach_type, info)

    # -- MIG layouts -------------------------------------------------------

    def mig_layout(self, controlpath_id):
        return self._with_gpu(controlpath_id, mig.current_layout)

    def apply_mig_layout(self, controlpath_id, layout):
        try:
            return self._with_gpu(controlpath_id,
                                  lambda handle: mig.apply(handle, layout))
        except mig.MigLayoutError as error:
            raise exception.DriverError(driver=self.name, reason=str(error))

    # -- NVML session ------------------------------------------------------

    def _with_gpu(self, controlpath_id, work):
        """``work(handle)`` of the GPU at ``controlpath_id``, in a session."""
        address = pci.address_of(controlpath_id)

        def find():
            for index in range(nvml.device_count()):
                handle = nvml.handle(index)
                if nvml.address(handle) == address:
                    return work(handle)
            raise exception.DriverError(
                driver=self.name, reason='no GPU at %s answers NVML'
                % address)
        with nvml.session():
            return find()

    def _with_nvml(self, work):
        """``work()`` inside an NVML session; [] on a host without NVML.

        Other NVML failures (driver not loaded, library and kernel module
        of different versions) raise, so the agent keeps the last known
        devices instead of dropping them.
        """
        try:
            with nvml.session():
                return work()
        except pynvml.NVMLError_LibraryNotFound:
            if not self._said_no_library:
                LOG.warning('libnvidia-ml.so.1 is not installed: this host '
                            'has no NVIDIA driver, so the nvidia_gpu driver '
                            'reports no GPUs')
                self._said_no_library = True
            return []
        except pynvml.NVMLError as exc:
            raise exception.DriverError(
                driver=self.name, reason='NVML: %s' % exc) from exc


def _uuid_of(device):
    return device.vendor_board_info['uuid']


def _address_of(device):
    return device.std_board_info.get('pci_address')


def _vendor_board_info(gpu, versions):
    mig_mode = {None: 'unsupported', True: 'enabled', False: 'disabled'}
    info = {'uuid': gpu.uuid, 'driver_version': versions[0],
            'cuda_version': versions[1], 'memory_total_bytes':
            gpu.memory_total, 'mig_mode': mig_mode[gpu.mig_enabled],
            # The NVML index and /dev/nvidia<minor>: dcgm-exporter's
            # ``gpu`` and ``device`` labels (conductor/dcgm_metrics.py).
            'index': gpu.index}
    if gpu.minor is not None:
        info['minor'] = gpu.minor
    if gpu.mig_enabled is not None:
        # The layout in place, largest profile first, as applied.
        info['mig_layout'] = mig.largest_first(
            m.profile or 'unknown' for m in gpu.migs)
    return info


def _gpu_traits(gpu):
    model = re.sub(r'^NVIDIA\s+', '', gpu.name)
    return {'trait0': 'CUSTOM_GPU_NVIDIA',
            'trait1': 'CUSTOM_GPU_PRODUCT_ID_%04X' % gpu.device_id,
            'trait2': 'CUSTOM_GPU_' + _custom(model)}


def _custom(text):
    """A Placement-safe name part: ``'1g.10gb+me'`` -> ``'1G_10GB_ME'``."""
    return re.sub(r'[^A-Z0-9]+', '_', text.upper()).strip('_')


def _utilization(reading):
    power_w = None if reading.power_mw is None else reading.power_mw / 1000
    values = {
        'gpu_percent': reading.gpu_percent,
        'memory_percent': reading.memory_percent,
        'memory_used_bytes': reading.memory_used,
        'memory_total_bytes': reading.memory_total,
        'temperature_c': reading.temperature,
        'power_w': power_w,
        'ecc_uncorrected_volatile': reading.ecc_uncorrected,
        'ecc_uncorrected_aggregate': reading.ecc_uncorrected_aggregate,
        'sm_clock_mhz': reading.sm_clock_mhz,
        'memory_clock_mhz': reading.memory_clock_mhz,
        'retired_pages_pending': reading.retired_pages_pending,
        'remapped_rows_pending': reading.remapped_rows_pending,
    }
    return {key: value for key, value in values.items() if value is not None}
