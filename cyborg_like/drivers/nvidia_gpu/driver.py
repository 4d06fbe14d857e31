"""NVIDIA GPUs through NVML (pynvml): inventory, health and vGPU mdevs.

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
    The one vGPU type the operator enabled for this GPU (``[nvidia_gpu]
    enabled_vgpu_types`` and ``[vgpu_<type>] device_addresses``, as Nova
    and Cyborg configure it), when sysfs ``mdev_supported_types`` offers
    it: the hardware gives N vGPUs of one type *or* the whole GPU, so
    offering every listed type would count the same silicon several
    times. num_accelerators is the instances the type can still make plus
    those we made, so a bound vGPU does not shrink the inventory; one
    MDEV handle per instance, each with a uuid stable across runs, and
    never one naming an mdev made outside the service (by hand, another
    tool): those lower what the GPU can still make and are not offered.
    Preparing the handle creates that mdev, releasing it removes it.
    From Ampere on, with SR-IOV, the types are on the GPU's virtual
    functions, one vGPU per VF: in the mdev layout a handle is an mdev on
    its VF (``parent``), and every VF lists one available whatever the
    GPU can make, so the offer is capped at the type's ``max_instance``
    (its sysfs description, else NVML's nvmlVgpuTypeGetMaxInstances;
    Nova's ``[mdev_<type>] max_instances``) less the instances of the type
    made outside the service, ours made always kept. A MIG-backed type
    (``NVIDIA H100-1-10C``: a 1g.10gb MIG device backs each vGPU) is also
    capped at the GPU's MIG devices of its profile (0 with MIG mode off);
    in NVIDIA's vendor-specific interface it is the VF
    itself (a PCI handle with ``asked_type``), made that vGPU type when
    prepared and given back when released (sysfs.py); a VF set to a type
    carries no uuid, so it counts as ours. While
    vGPUs of another type exist on the GPU (bound before the operator
    changed the type), that type stays offered and the change waits, with
    a warning, until they are released.

GPU errors reach the agent as they happen (``watch_health``, events.py):
a fatal Xid or a double-bit ECC error makes the GPU's readings unhealthy
for ``[nvidia_gpu] fatal_xid_hold`` seconds; every GPU's last Xid is in its
readings' utilization (``last_xid``).

Without NVML on the host (no NVIDIA driver) the driver reports nothing and
says so once. A GPU that stops answering NVML (GPU_IS_LOST) is kept as last
seen in the inventory and reported unhealthy; the other GPUs carry on.
"""

import dataclasses
import re
import uuid

from oslo_log import log as logging
import pynvml

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.conf import nvidia_gpu as nvidia_gpu_conf
from cyborg_like.drivers import base
from cyborg_like.drivers.nvidia_gpu import events
from cyborg_like.drivers.nvidia_gpu import mig
from cyborg_like.drivers.nvidia_gpu import nvml
from cyborg_like.drivers.nvidia_gpu import sysfs
from cyborg_like.drivers import pci

LOG = logging.getLogger(__name__)

# Fixed forever: mdev uuids derive from it, and must not change on upgrade.
_MDEV_NAMESPACE = uuid.UUID('6e0f3c52-52a4-4b5e-9d2b-3f6c4ad1a7f0')


class NvidiaGPUDriver(base.AcceleratorDriver, base.HealthReporting,
                      base.HealthWatching, base.AttachPreparing,
                      base.MigPartitioning):
    name = 'nvidia_gpu'

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = sysfs.Sysfs(conf.nvidia_gpu.sysfs_root)
        # GPU uuid -> the Device last read from it. Keeps a GPU that stops
        # answering in the inventory, and tells health() which one it is.
        # Not keyed by NVML index: indexes shift when a GPU leaves the bus.
        self._last_seen = {}
        self._said_no_library = False
        # GPU uuid -> (type kept, type asked) last warned about.
        self._said_type_kept = {}
        # Fatal NVML events held per GPU, and each GPU's last Xid.
        self._latch = events.Latch(conf.nvidia_gpu.fatal_xid_hold)
        self._listener = None

    # -- inventory ---------------------------------------------------------

    def discover(self):
        def work():
            versions = nvml.system_versions()
            enabled = _enabled_vgpu_types(self.conf)
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
        offer = self._offered_vgpu(gpu, wanted_type)
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

    def _vgpu_offers(self, gpu):
        """``{type id: _Offer}`` of every vGPU type the GPU lists: on the
        GPU itself (before Ampere), or one vGPU per SR-IOV VF listing it
        (Ampere on), in the mdev or the vendor-specific layout."""
        offers = {}

        def offer(type_id, name):
            return offers.setdefault(type_id, _Offer(type_id, name))

        for vgpu_type in self.sysfs.vgpu_types(gpu.address):
            _offer_on_gpu(gpu, offer(vgpu_type.type_id, vgpu_type.name),
                          vgpu_type)
        for n, vf in enumerate(self.sysfs.virtual_functions(gpu.address)):
            vendor = self.sysfs.vf_vgpu(vf)
            if vendor is not None:
                _offer_vendor_vf(offer, vf, vendor)
            else:
                _offer_vf_mdevs(gpu, offer, n, vf, self.sysfs.vgpu_types(vf))
        return offers

    def _limit(self, gpu, offer):
        """Cap an offer on VFs at what the GPU can make: the type's max
        instances (NVML where sysfs did not say) and, for a MIG-backed
        type, the MIG devices of its profile, one per vGPU."""
        if not offer.on_vfs:
            return offer
        if offer.limit is None:
            offer.limit_to(nvml.vgpu_max_instances(gpu.index, offer.type_id))
        profile = _mig_backed_profile(offer.name)
        if profile is not None:
            offer.limit_to(sum(m.profile == profile for m in gpu.migs)
                           if gpu.mig_enabled else 0)
        return offer

    def _offered_vgpu(self, gpu, wanted):
        """The _Offer of the vGPU type this GPU offers, or None (a PGPU)."""
        offers = self._vgpu_offers(gpu)
        held = next((o for o in offers.values() if o.held), None)
        if held is not None and held.type_id != wanted:
            # Reshaping under bound vGPUs would pull them from under their
            # workloads, and Placement would refuse the new inventory.
            if self._said_type_kept.get(gpu.uuid) != (held.type_id, wanted):
                LOG.warning(
                    'GPU %s (%s) holds %d vGPU(s) of type %s: it keeps '
                    'offering %s until they are released, not %s as '
                    'configured', gpu.uuid, gpu.address, held.held,
                    held.type_id, held.type_id, wanted or 'the whole GPU')
                self._said_type_kept[gpu.uuid] = (held.type_id, wanted)
            return self._limit(gpu, held)
        self._said_type_kept.pop(gpu.uuid, None)
        if wanted is None:
            return None
        offered = offers.get(wanted)
        if offered is None:
            LOG.warning('GPU %s (%s) does not offer vGPU type %s (sysfs '
                        'lists %s): offering the whole GPU', gpu.uuid,
                        gpu.address, wanted, ', '.join(offers) or 'none')
            return None
        return self._limit(gpu, offered)

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
        if attach_type == 'PCI' and 'asked_type' in info:
            self._vf_vgpu(controlpath_id, info, info['asked_type'])
            return info
        if attach_type != 'MDEV':
            return info         # a PCI function or MIG device: exists already
        info.setdefault('uuid', str(uuid.uuid4()))
        try:
            if not self.sysfs.mdev_exists(info['uuid']):
                self.sysfs.create_mdev(self._mdev_parent(controlpath_id, info),
                                       info.get('asked_type', ''),
                                       info['uuid'])
        except (OSError, ValueError) as exc:
            raise exception.DriverError(
                driver=self.name, reason='cannot create vGPU %s: %s'
                % (info['uuid'], exc)) from exc
        return info

    def release_attach_handle(self, controlpath_id, attach_handle):
        attach_type, info = base.unpack_handle(attach_handle)
        if attach_type == 'PCI' and 'asked_type' in info:
            self._vf_vgpu(controlpath_id, info, None)
            return
        if attach_type != 'MDEV' or 'uuid' not in info:
            return
        try:
            if self.sysfs.mdev_exists(info['uuid']):
                self.sysfs.remove_mdev(info['uuid'])
        except (OSError, ValueError) as exc:
            raise exception.DriverError(
                driver=self.name, reason='cannot remove vGPU %s: %s'
                % (info['uuid'], exc)) from exc

    def _own_vf(self, controlpath_id, address):
        """``address`` if it is a VF of the GPU at ``controlpath_id``:
        handle info comes back from the database, and must not reach
        another device."""
        if address not in self.sysfs.virtual_functions(
                pci.address_of(controlpath_id)):
            raise ValueError('%s is no VF of GPU %s' % (
                address, pci.address_of(controlpath_id)))
        return address

    def _mdev_parent(self, controlpath_id, info):
        if 'parent' in info:
            return self._own_vf(controlpath_id, info['parent'])
        return pci.address_of(controlpath_id)

    def _vf_vgpu(self, controlpath_id, info, type_id):
        """Make the VF of a PCI handle a vGPU of ``type_id`` (vendor
        interface), or give it back (None); nothing if it already is."""
        try:
            vf = self._own_vf(controlpath_id, inventory.pci_address(info))
            vendor = self.sysfs.vf_vgpu(vf)
            if vendor is None:
                raise ValueError('it has no vGPU interface')
            current = vendor.current
            if current == type_id:
                return
            if type_id is not None and current is not None:
                raise ValueError('the VF is a vGPU of type %s already'
                                 % current)
            if type_id is None and current != info['asked_type']:
                return          # not ours to give back
            self.sysfs.set_vf_vgpu_type(vf, type_id)
        except (OSError, ValueError) as exc:
            raise exception.DriverError(
                driver=self.name, reason='cannot %s vGPU on VF %s: %s' % (
                    'give back the' if type_id is None else 'make a',
                    inventory.pci_address(info), exc)) from exc

    # -- NVML session ------------------------------------------------------

    # -- MIG layouts -------------------------------------------------------

    def mig_layout(self, controlpath_id):
        return self._with_gpu(controlpath_id, mig.current_layout)

    def apply_mig_layout(self, controlpath_id, layout):
        try:
            return self._with_gpu(controlpath_id,
                                  lambda handle: mig.apply(handle, layout))
        except mig.MigLayoutError as error:
            raise exception.DriverError(driver=self.name, reason=str(error))

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
            gpu.memory_total, 'mig_mode': mig_mode[gpu.mig_enabled]}
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


@dataclasses.dataclass
class _Offer:
    """A vGPU type as one GPU can give it: a handle per vGPU it can make
    (made or not), and how many are made now (bound)."""
    type_id: str
    name: str
    # (handle, made) in VF order.
    entries: list = dataclasses.field(default_factory=list)
    held: int = 0
    # Instances of the type on the GPU that are not ours (made by hand,
    # or by another tool): they count against the limit, never offered.
    others: int = 0
    # The most vGPUs of the type the GPU makes, where its VFs list more
    # (each VF lists one whatever the type's max_instance says).
    limit: int | None = None
    on_vfs: bool = False

    def add(self, handle, made=False):
        self.entries.append((handle, made))

    def limit_to(self, most):
        if most is not None:
            self.limit = most if self.limit is None else min(self.limit,
                                                             most)

    @property
    def handles(self):
        """Every made one (bound), and free ones, in order, up to the
        limit: what the hardware can still create, never more."""
        room = None if self.limit is None else self.limit - self.others - \
            sum(made for _, made in self.entries)
        kept = []
        for handle, made in self.entries:
            if not made:
                if room is not None and room <= 0:
                    continue
                room = None if room is None else room - 1
            kept.append(handle)
        return kept


def _offer_on_gpu(gpu, found, vgpu_type):
    """The mdevs of a type on the GPU itself: ours made (kept, whatever
    their number) and as many free ones as the kernel says it can still
    make; mdevs made by others lower that and are never offered."""
    created = set(vgpu_type.created)
    # Any number we may have handed out: up to all the GPU ever held.
    count = max(vgpu_type.available + len(created),
                vgpu_type.max_instances or 0)
    ours = 0
    for n in range(count):
        made = _mdev_uuid(gpu.uuid, vgpu_type.type_id, n) in created
        ours += made
        found.add(_mdev_handle(gpu, vgpu_type, n), made=made)
    found.held += len(created)
    found.others += len(created) - ours
    found.limit_to(vgpu_type.available + len(created))


def _offer_vendor_vf(offer, vf, vendor):
    """A VF in NVIDIA's vendor-specific interface: the PCI function
    itself, for the type it is (made) or each type it can become."""
    types = vendor.creatable if vendor.current is None else {
        vendor.current: vendor.creatable.get(vendor.current, '')}
    for type_id, name in types.items():
        found = offer(type_id, name)
        found.on_vfs = True
        found.held += vendor.current is not None
        found.add(base.AttachHandle('PCI', dict(
            inventory.pci_address_info(vf), asked_type=type_id)),
            made=vendor.current is not None)


def _offer_vf_mdevs(gpu, offer, n, vf, vgpu_types):
    """VF ``n`` in the mdev layout: one vGPU, ours if its mdev has the
    uuid we give it, free if it holds none, else taken by another."""
    taken = any(vgpu_type.created for vgpu_type in vgpu_types)
    for vgpu_type in vgpu_types:
        if not (vgpu_type.available or vgpu_type.created):
            continue
        found = offer(vgpu_type.type_id, vgpu_type.name)
        found.on_vfs = True
        found.held += len(vgpu_type.created)
        found.limit_to(vgpu_type.max_instances)
        handle = _mdev_handle(gpu, vgpu_type, n, parent=vf)
        ours = handle.attach_info['uuid'] in vgpu_type.created
        found.others += len(vgpu_type.created) - ours
        if ours or not taken:
            found.add(handle, made=ours)


# A MIG-backed vGPU type by its name: "NVIDIA H100-1-10C" is backed by a
# 1g.10gb MIG device, "...-1-10CME" by a 1g.10gb+me one.
_MIG_BACKED = re.compile(r'-(\d+)-(\d+)C(ME)?$')


def _mig_backed_profile(type_name):
    """The MIG profile backing a vGPU type (``'1g.10gb'``), or None for
    a time-sliced type."""
    found = _MIG_BACKED.search(type_name or '')
    if found is None:
        return None
    return '%sg.%sgb%s' % (found.group(1), found.group(2),
                           '+me' if found.group(3) else '')


def _mdev_handle(gpu, vgpu_type, number, parent=None):
    info = {'asked_type': vgpu_type.type_id,
            'vgpu_mark': '%s_%d' % (vgpu_type.type_id, number),
            'uuid': _mdev_uuid(gpu.uuid, vgpu_type.type_id, number),
            'device_api': vgpu_type.device_api}
    if parent is not None:
        info['parent'] = parent         # the VF the mdev is made on
    return base.AttachHandle('MDEV', info)


def _mdev_uuid(gpu_uuid, type_id, number):
    # The GPU uuid is unique worldwide, so no two hosts share an mdev uuid.
    return str(uuid.uuid5(_MDEV_NAMESPACE,
                          '%s/%s/%d' % (gpu_uuid, type_id, number)))


def _enabled_vgpu_types(conf):
    """``address -> the vGPU type enabled for that GPU, or None``, from
    ``[nvidia_gpu] enabled_vgpu_types`` and ``[vgpu_<type>]
    device_addresses``; a GPU named for two types is a config error."""
    nvidia_gpu_conf.register_vgpu_groups(conf)
    enabled = conf.nvidia_gpu.enabled_vgpu_types
    by_address = {}
    for type_id in enabled:
        group = nvidia_gpu_conf.VGPU_GROUP % type_id
        for address in conf[group].device_addresses:
            address = pci.full_address(address)
            other = by_address.setdefault(address, type_id)
            if other != type_id:
                raise exception.DriverError(
                    driver='nvidia_gpu', reason='GPU %s is listed in both '
                    '[vgpu_%s] and [vgpu_%s] device_addresses: a GPU offers '
                    'one vGPU type' % (address, other, type_id))
    # Nova's rule: one type enabled and no addresses given -> every GPU.
    default = enabled[0] if len(enabled) == 1 and not by_address else None
    return lambda address: by_address.get(address, default)


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
