"""The interface every accelerator driver implements.

Drivers are loaded by stevedore from the entry-point group
``cyborg_like.accelerator.driver``; ``[agent] enabled_drivers`` chooses which.
A driver knows its hardware and nothing else: no RPC, no database. It
describes what it finds with the dataclasses below, whose ``to_dict`` is the
wire format of common/inventory.py.
"""

import abc
import dataclasses

NAMESPACE = 'cyborg_like.accelerator.driver'


@dataclasses.dataclass
class AttachHandle:
    attach_type: str            # PCI or MDEV
    attach_info: dict           # PCI address fields, or the mdev uuid


def unpack_handle(attach_handle):
    """(type, a copy of info) of an :class:`AttachHandle` or its wire dict
    (the agent passes either to a driver's attach handle hooks)."""
    if isinstance(attach_handle, AttachHandle):
        return attach_handle.attach_type, dict(attach_handle.attach_info)
    return attach_handle['attach_type'], dict(attach_handle['attach_info'])


@dataclasses.dataclass
class Deployable:
    name: str
    driver_name: str
    num_accelerators: int = 1
    attributes: dict = dataclasses.field(default_factory=dict)
    attach_handles: list = dataclasses.field(default_factory=list)
    bitstream_id: str | None = None


@dataclasses.dataclass
class Device:
    type: str                   # GPU, FPGA, ...
    vendor: str                 # PCI vendor id, e.g. 0x10de
    model: str
    controlpath_id: dict        # {'cpid_type': 'PCI', 'cpid_info': {...}}
    deployables: list = dataclasses.field(default_factory=list)
    std_board_info: dict = dataclasses.field(default_factory=dict)
    vendor_board_info: dict = dataclasses.field(default_factory=dict)

    def to_dict(self):
        return dataclasses.asdict(self)


class AcceleratorDriver(abc.ABC):
    """Finds the devices of one kind on this host."""

    #: The name of the driver's entry point, recorded on its deployables.
    name = None

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def discover(self):
        """Return the list of :class:`Device` present now.

        Raise on failure (library missing, tool error): the agent logs it
        and keeps this driver's last known devices, so a passing fault never
        makes devices vanish.
        """


@dataclasses.dataclass
class DeviceHealth:
    """One reading of a device's health and load, sent with heartbeats.

    ``healthy`` False makes the device unavailable for new binds; ``reasons``
    says why in words an operator can act on. ``unchecked`` names the
    checks the driver could not make on this device (its firmware, driver
    or model lacks the query), so that healthy never means "not looked at".
    """
    controlpath_id: dict
    healthy: bool = True
    reasons: list = dataclasses.field(default_factory=list)
    utilization: dict = dataclasses.field(default_factory=dict)
    unchecked: list = dataclasses.field(default_factory=list)

    def to_dict(self):
        return dataclasses.asdict(self)


class Programmable(abc.ABC):
    """A driver whose deployables can be (re)programmed with a bitstream."""

    @abc.abstractmethod
    def program(self, controlpath_id, deployable_name, bitstream_path,
                bitstream_id):
        """Program region ``deployable_name`` of the device at
        ``controlpath_id`` with the file at ``bitstream_path``; raise
        :class:`cyborg_like.common.exception.DriverError` with the tool's
        message on failure. The next ``discover`` reports ``bitstream_id``
        on that deployable, read back from the hardware.
        """


class HealthReporting(abc.ABC):
    """A driver that can tell how its devices are doing."""

    @abc.abstractmethod
    def health(self):
        """Return a list of :class:`DeviceHealth`, one per device."""


class HealthWatching(abc.ABC):
    """A driver that hears of faults as they happen (an event of the
    vendor's library) instead of only when :meth:`HealthReporting.health`
    asks: the agent then sends the readings at once, not at its next
    heartbeat."""

    @abc.abstractmethod
    def watch_health(self, on_change):
        """Start watching; ``on_change()`` is called, from the driver's own
        thread, whenever a device's health verdict changed (the next
        ``health()`` tells how). Return once watching, so that no fault
        after the call is missed; calling it again while watching does
        nothing."""

    @abc.abstractmethod
    def stop_watching(self):
        """Stop and wait for the watching thread; ``on_change`` is not
        called after this returns. Safe to call when not watching."""


class AttachPreparing(abc.ABC):
    """A driver that must create something before a handle is given out
    (an mdev for a vGPU) and remove it afterwards."""

    @abc.abstractmethod
    def prepare_attach_handle(self, controlpath_id, attach_handle):
        """Make ``attach_handle`` (type and info) usable; return its info."""

    @abc.abstractmethod
    def release_attach_handle(self, controlpath_id, attach_handle):
        """Undo :meth:`prepare_attach_handle`; return True when that erased
        the region (it holds no bitstream any more)."""


class Flashable(abc.ABC):
    """A driver that can replace a card's own firmware (an FPGA's FIM or
    shell, its BMC), as opposed to programming one of its regions."""

    @abc.abstractmethod
    def firmware_versions(self, controlpath_id):
        """What identifies the firmware now on the device at
        ``controlpath_id`` (a dict of strings or lists, for the record of
        a flash: versions, interface ids, platform names)."""

    @abc.abstractmethod
    def flash_firmware(self, controlpath_id, image_path):
        """Write the image at ``image_path`` (verified by the caller) with
        the vendor's tool; raise DriverError with its message on failure.
        Regions and their interfaces may differ afterwards: the caller
        discovers the device again."""


class MigPartitioning(abc.ABC):
    """A driver that can cut a GPU into MIG devices as the operator asks."""

    @abc.abstractmethod
    def mig_layout(self, controlpath_id):
        """The MIG profile names of the GPU at ``controlpath_id`` now,
        largest first ([]: the whole GPU)."""

    @abc.abstractmethod
    def apply_mig_layout(self, controlpath_id, layout):
        """Make the GPU's MIG devices exactly ``layout`` (profile names; []
        turns MIG mode off); return the layout now in place. Raise
        DriverError saying why when the GPU cannot take it, leaving the
        layout it had."""
