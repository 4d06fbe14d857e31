"""vGPUs of NVIDIA GPUs: the type a GPU offers, its handles, and making
and removing a vGPU when its handle is prepared and released.

A GPU offers the one vGPU type the operator enabled for it
(``[nvidia_gpu] enabled_vgpu_types`` and ``[vgpu_<type>]
device_addresses``, as Nova and Cyborg configure it), when sysfs
``mdev_supported_types`` offers it: the hardware gives N vGPUs of one type
*or* the whole GPU, so offering every listed type would count the same
silicon several times. The driver (driver.py) makes it the deployable
``<gpu uuid>-vgpu-<type>`` (rc VGPU); num_accelerators is the instances
the type can still make plus those we made, so a bound vGPU does not
shrink the inventory; one MDEV handle per instance, each with a uuid
stable across runs, and never one naming an mdev made outside the service
(by hand, another tool): those lower what the GPU can still make and are
not offered. Preparing the handle creates that mdev, releasing it removes
it.

From Ampere on, with SR-IOV, the types are on the GPU's virtual
functions, one vGPU per VF: in the mdev layout a handle is an mdev on its
VF (``parent``), and every VF lists one available whatever the GPU can
make, so the offer is capped at the type's ``max_instance`` (its sysfs
description, else NVML's nvmlVgpuTypeGetMaxInstances; Nova's
``[mdev_<type>] max_instances``) less the instances of the type made
outside the service, ours made always kept. A MIG-backed type (``NVIDIA
H100-1-10C``: a 1g.10gb MIG device backs each vGPU) is also capped at the
GPU's MIG devices of its profile (0 with MIG mode off); in NVIDIA's
vendor-specific interface it is the VF itself (a PCI handle with
``asked_type``), made that vGPU type when prepared and given back when
released (sysfs.py); a VF set to a type carries no uuid, so it counts as
ours. While vGPUs of another type exist on the GPU (bound before the
operator changed the type), that type stays offered and the change waits,
with a warning, until they are released.
"""

import dataclasses
import re
import uuid

from oslo_log import log as logging

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.conf import nvidia_gpu as nvidia_gpu_conf
from cyborg_like.drivers import base
from cyborg_like.drivers.nvidia_gpu import nvml
from cyborg_like.drivers import pci

LOG = logging.getLogger(__name__)

# Fixed forever: mdev uuids derive from it, and must not change on upgrade.
_MDEV_NAMESPACE = uuid.UUID('6e0f3c52-52a4-4b5e-9d2b-3f6c4ad1a7f0')


def is_vgpu(attach_type, info):
    """Whether a handle is a vGPU, made when prepared: an mdev, or a VF
    in the vendor-specific interface."""
    return attach_type == 'MDEV' or (attach_type == 'PCI'
                                     and 'asked_type' in info)


class Vgpus:
    """The vGPU side of one driver: what each GPU offers, and the vGPUs
    its handles stand for."""

    def __init__(self, sysfs, driver_name):
        self.sysfs = sysfs
        self.driver_name = driver_name
        # GPU uuid -> (type kept, type asked) last warned about.
        self._said_type_kept = {}

    # -- what a GPU offers -------------------------------------------------

    def offered(self, gpu, wanted):
        """The _Offer of the vGPU type this GPU offers, or None (a PGPU)."""
        offers = self._offers(gpu)
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

    def _offers(self, gpu):
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

    # -- attach handles ----------------------------------------------------

    def prepare(self, controlpath_id, attach_type, info):
        """Make the vGPU of a handle (``is_vgpu``); returns its info."""
        if attach_type == 'PCI':
            self._vf_vgpu(controlpath_id, info, info['asked_type'])
            return info
        info.setdefault('uuid', str(uuid.uuid4()))
        try:
            if not self.sysfs.mdev_exists(info['uuid']):
                self.sysfs.create_mdev(self._mdev_parent(controlpath_id, info),
                                       info.get('asked_type', ''),
                                       info['uuid'])
        except (OSError, ValueError) as exc:
            raise exception.DriverError(
                driver=self.driver_name, reason='cannot create vGPU %s: %s'
                % (info['uuid'], exc)) from exc
        return info

    def release(self, controlpath_id, attach_type, info):
        """Remove the vGPU of a handle (``is_vgpu``), if it is there."""
        if attach_type == 'PCI':
            self._vf_vgpu(controlpath_id, info, None)
            return
        if 'uuid' not in info:
            return
        try:
            if self.sysfs.mdev_exists(info['uuid']):
                self.sysfs.remove_mdev(info['uuid'])
        except (OSError, ValueError) as exc:
            raise exception.DriverError(
                driver=self.driver_name, reason='cannot remove vGPU %s: %s'
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
                driver=self.driver_name,
                reason='cannot %s vGPU on VF %s: %s' % (
                    'give back the' if type_id is None else 'make a',
                    inventory.pci_address(info), exc)) from exc


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
    return mdev_handle(gpu.uuid, gpu.address, vgpu_type.type_id, number,
                       vgpu_type.device_api, parent=parent)


def mdev_handle(gpu_uuid, address, type_id, number, device_api,
                parent=None):
    """The MDEV handle of vGPU ``number`` of ``type_id`` on the GPU
    ``gpu_uuid`` at PCI ``address``. Public so that the fake driver
    reports its vGPUs in the very shape, and with the very mdev uuids,
    this driver gives.

    Nova's libvirt driver makes the mdev itself where it is missing: on
    the device that ``domain``/``bus``/``device``/``function`` name (the
    VF on SR-IOV GPUs), of type ``asked_type``, with the ARQ's
    ``attach_handle_uuid`` (the ``uuid`` here: db/arqs.py)."""
    info = dict(inventory.pci_address_info(parent or address),
                asked_type=type_id,
                vgpu_mark='%s_%d' % (type_id, number),
                uuid=_mdev_uuid(gpu_uuid, type_id, number),
                device_api=device_api)
    if parent is not None:
        info['parent'] = parent         # the VF the mdev is made on
    return base.AttachHandle('MDEV', info)


def _mdev_uuid(gpu_uuid, type_id, number):
    # The GPU uuid is unique worldwide, so no two hosts share an mdev uuid.
    return str(uuid.uuid5(_MDEV_NAMESPACE,
                          '%s/%s/%d' % (gpu_uuid, type_id, number)))


def enabled_types(conf):
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
