"""NVIDIA GPUs through NVML (pynvml): inventory, health and vGPU mdevs.

One GPU becomes one :class:`base.Device` whose control path is its PCI
address, with these deployables:

``<gpu uuid>`` (rc PGPU)
    The whole GPU, with a PCI attach handle. It offers 0 accelerators while
    the GPU is partitioned (MIG mode on, or vGPU types offered), so the same
    silicon is never offered twice.
``<gpu uuid>-mig-<gpu instance>-<compute instance>`` (rc CUSTOM_MIG_<PROFILE>)
    One per MIG device when MIG mode is on. Its single attach handle is of
    type MDEV (the wire schema knows PCI and MDEV only) and carries the MIG
    uuid, which is what CUDA and container runtimes take. MIG devices are
    made by the operator (nvidia-smi mig -cgi/-cci), so preparing the handle
    creates nothing.
``<gpu uuid>-vgpu-<type>`` (rc VGPU)
    One per vGPU type in sysfs ``mdev_supported_types``. num_accelerators
    is the instances the type can still make plus those already made, so a
    bound vGPU does not shrink the inventory; one MDEV handle per instance,
    each with a uuid stable across runs. Preparing the handle creates that
    mdev, releasing it removes it.

Without NVML on the host (no NVIDIA driver) the driver reports nothing and
says so once. A GPU that stops answering NVML (GPU_IS_LOST) is kept as last
seen in the inventory and reported unhealthy; the other GPUs carry on.
"""

import re
import uuid

from oslo_log import log as logging
import pynvml

from cyborg_like.common import exception
from cyborg_like.drivers import base
from cyborg_like.drivers.nvidia_gpu import nvml
from cyborg_like.drivers.nvidia_gpu import sysfs
from cyborg_like.drivers import pci

LOG = logging.getLogger(__name__)

# Fixed forever: mdev uuids derive from it, and must not change on upgrade.
_MDEV_NAMESPACE = uuid.UUID('6e0f3c52-52a4-4b5e-9d2b-3f6c4ad1a7f0')


class NvidiaGPUDriver(base.AcceleratorDriver, base.HealthReporting,
                      base.AttachPreparing):
    name = 'nvidia_gpu'

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = sysfs.Sysfs(conf.nvidia_gpu.sysfs_root)
        # GPU uuid -> the Device last read from it. Keeps a GPU that stops
        # answering in the inventory, and tells health() which one it is.
        # Not keyed by NVML index: indexes shift when a GPU leaves the bus.
        self._last_seen = {}
        self._said_no_library = False

    # -- inventory ---------------------------------------------------------

    def discover(self):
        def work():
            versions = nvml.system_versions()
            found, silent = {}, False
            for index in range(nvml.device_count()):
                try:
                    gpu = nvml.read_gpu(index)
                except pynvml.NVMLError as exc:
                    LOG.error('NVIDIA GPU %d does not answer NVML (%s)',
                              index, exc)
                    silent = True
                    continue
                found[gpu.uuid] = self._device(gpu, versions)
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

    def _device(self, gpu, versions):
        vgpu_types = self.sysfs.vgpu_types(gpu.address)
        partitioned = bool(gpu.mig_enabled or vgpu_types)
        deployables = ([self._pgpu(gpu, partitioned)]
                       + [self._mig(gpu, mig) for mig in gpu.migs]
                       + [self._vgpu(gpu, each) for each in vgpu_types])
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

    def _mig(self, gpu, mig):
        ids = (str(mig.gpu_instance_id), str(mig.compute_instance_id))
        rc = 'CUSTOM_MIG_%s' % _custom(mig.profile or 'unknown profile')
        info = {'mig_uuid': mig.uuid, 'gpu_instance_id': ids[0],
                'compute_instance_id': ids[1], 'profile': mig.profile or ''}
        return base.Deployable(
            name='%s-mig-%s-%s' % (gpu.uuid, *ids), driver_name=self.name,
            attributes={'rc': rc, **_gpu_traits(gpu)},
            attach_handles=[base.AttachHandle('MDEV', info)])

    def _vgpu(self, gpu, vgpu_type):
        type_id = vgpu_type.type_id
        total = vgpu_type.available + len(vgpu_type.created)
        handles = [base.AttachHandle('MDEV', {
            'asked_type': type_id,
            'vgpu_mark': '%s_%d' % (type_id, n),
            'uuid': _mdev_uuid(gpu.uuid, type_id, n),
            'device_api': vgpu_type.device_api}) for n in range(total)]
        return base.Deployable(
            name='%s-vgpu-%s' % (gpu.uuid, type_id), driver_name=self.name,
            num_accelerators=total,
            attributes={'rc': 'VGPU', 'trait0': 'CUSTOM_GPU_NVIDIA',
                        'trait1': 'CUSTOM_VGPU_' + _custom(
                            vgpu_type.name or type_id)},
            attach_handles=handles)

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
                found += [_unreachable(device, error) for device, error
                          in self._lost(answered) if error is not None]
            return found
        return self._with_nvml(work)

    def _health_one(self, index):
        gpu_handle = nvml.handle(index)
        controlpath = pci.controlpath_id(nvml.address(gpu_handle))
        gpu_uuid = nvml.uuid(gpu_handle)
        reading = nvml.read_health(gpu_handle)
        reasons = self._verdict(reading)
        return gpu_uuid, base.DeviceHealth(
            controlpath, healthy=not reasons, reasons=reasons,
            utilization=_utilization(reading))

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
        if attach_type != 'MDEV' or 'mig_uuid' in info:
            return info         # a PCI function or MIG device: exists already
        info.setdefault('uuid', str(uuid.uuid4()))
        try:
            if not self.sysfs.mdev_exists(info['uuid']):
                self.sysfs.create_mdev(pci.address_of(controlpath_id),
                                       info.get('asked_type', ''),
                                       info['uuid'])
        except (OSError, ValueError) as exc:
            raise exception.DriverError(
                driver=self.name, reason='cannot create vGPU %s: %s'
                % (info['uuid'], exc)) from exc
        return info

    def release_attach_handle(self, controlpath_id, attach_handle):
        attach_type, info = base.unpack_handle(attach_handle)
        if attach_type != 'MDEV' or 'mig_uuid' in info or 'uuid' not in info:
            return
        try:
            if self.sysfs.mdev_exists(info['uuid']):
                self.sysfs.remove_mdev(info['uuid'])
        except (OSError, ValueError) as exc:
            raise exception.DriverError(
                driver=self.name, reason='cannot remove vGPU %s: %s'
                % (info['uuid'], exc)) from exc

    # -- NVML session ------------------------------------------------------

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


def _unreachable(device, error):
    return base.DeviceHealth(
        device.controlpath_id, healthy=False,
        reasons=['NVML cannot reach the GPU: %s' % error])


def _uuid_of(device):
    return device.vendor_board_info['uuid']


def _address_of(device):
    return device.std_board_info.get('pci_address')


def _vendor_board_info(gpu, versions):
    mig_mode = {None: 'unsupported', True: 'enabled', False: 'disabled'}
    return {'uuid': gpu.uuid, 'driver_version': versions[0],
            'cuda_version': versions[1], 'memory_total_bytes':
            gpu.memory_total, 'mig_mode': mig_mode[gpu.mig_enabled]}


def _gpu_traits(gpu):
    model = re.sub(r'^NVIDIA\s+', '', gpu.name)
    return {'trait0': 'CUSTOM_GPU_NVIDIA',
            'trait1': 'CUSTOM_GPU_PRODUCT_ID_%04X' % gpu.device_id,
            'trait2': 'CUSTOM_GPU_' + _custom(model)}


def _custom(text):
    """A Placement-safe name part: ``'1g.10gb+me'`` -> ``'1G_10GB_ME'``."""
    return re.sub(r'[^A-Z0-9]+', '_', text.upper()).strip('_')


def _mdev_uuid(gpu_uuid, type_id, number):
    # The GPU uuid is unique worldwide, so no two hosts share an mdev uuid.
    return str(uuid.uuid5(_MDEV_NAMESPACE,
                          '%s/%s/%d' % (gpu_uuid, type_id, number)))


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
        'retired_pages_pending': reading.retired_pages_pending,
        'remapped_rows_pending': reading.remapped_rows_pending,
    }
    return {key: value for key, value in values.items() if value is not None}
