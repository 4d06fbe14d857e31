"""SQLAlchemy models: Cyborg's data model plus our hosts.

Only the conductor imports this package. JSON documents (board info, control
path and attach info, profile groups) are stored as text, as Cyborg does, so
the schema is the same on SQLite, MariaDB and PostgreSQL.
"""

import datetime
import json

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import mysql


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    pass


class TimestampMixin:
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, default=utcnow, nullable=False)
    updated_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, onupdate=utcnow)


class Conductor(TimestampMixin, Base):
    """A running conductor process and its last heartbeat (liveness)."""

    __tablename__ = 'conductors'
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    last_heartbeat: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)


class Host(TimestampMixin, Base):
    """A compute host running an agent, with its last heartbeat."""

    __tablename__ = 'hosts'
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    hostname: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), unique=True)
    last_heartbeat: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    agent_version: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    # sha256 of the inventory last accepted from the agent: a heartbeat
    # carrying another hash makes the conductor ask for a full report.
    inventory_hash: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    # Non-zero while Placement may not match this host's devices: bumped by
    # every change of inventory, device status or health, reset by a
    # successful sync that began at the same value (conductor/placement/).
    placement_dirty: orm.Mapped[int] = orm.mapped_column(
        default=0, server_default='0')
    # JSON {driver family: version} as the last driver operation on this
    # host left it (db/driver_operations.py).
    driver_versions: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # When a sync of this host last succeeded: a conductor's first sync
    # marks the hosts not synced within an interval, once for all
    # conductors (conductor/placement/runner.py).
    placement_synced_at: orm.Mapped[datetime.datetime | None] = (
        orm.mapped_column(sa.DateTime))
    # A conductor syncing this host holds it until then; another may take
    # it over after (db/placement_sync.py ``claim``).
    placement_claimed_until: orm.Mapped[datetime.datetime | None] = (
        orm.mapped_column(sa.DateTime))
    # JSON sorted list of the Placement aggregates (lower-case UUIDs) of
    # the host's compute node provider, as the last Placement sync of the
    # host read them; NULL until one did (db/placement_sync.py).
    aggregates: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # The operators' free-form labels, a JSON object with sorted keys
    # (db/hosts.py ``set_labels``; rollouts select by them).
    labels: orm.Mapped[str | None] = orm.mapped_column(sa.Text)


class Device(TimestampMixin, Base):
    __tablename__ = 'devices'
    __table_args__ = (
        sa.Index('devices_hostname_idx', 'hostname'),
        # Lists page in (created_at, id) order by default.
        sa.Index('devices_created_at_id_idx', 'created_at', 'id'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    type: orm.Mapped[str] = orm.mapped_column(sa.String(30))
    vendor: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    model: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    std_board_info: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    vendor_board_info: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    status: orm.Mapped[str] = orm.mapped_column(
        sa.String(30), default='enabled')
    # The latest heartbeat's reading: healthy, unhealthy or unknown.
    health: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), default='unknown', server_default='unknown')
    health_reasons: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # JSON list: the checks the driver could not make (its reading said).
    health_unchecked: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    utilization: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    health_updated_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    # Set while a driver operation changes this device's driver, and kept
    # after one that failed: not bindable, Placement inventory reserved.
    drained_by: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    drain_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Where its health readings left it (common/states.py DEVICE_SERVICE):
    # serving, drained or flagged; healthy readings in a row while out of
    # service; when it last moved.
    service_state: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), default='serving', server_default='serving')
    healthy_checks: orm.Mapped[int] = orm.mapped_column(
        default=0, server_default='0')
    service_changed_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)

    controlpath_ids: orm.Mapped[list['ControlpathID']] = orm.relationship(
        back_populates='device', cascade='all, delete-orphan',
        passive_deletes=True)
    deployables: orm.Mapped[list['Deployable']] = orm.relationship(
        back_populates='device', cascade='all, delete-orphan',
        passive_deletes=True)


class ControlpathID(TimestampMixin, Base):
    """How the host reaches a device (its PF PCI address); its identity."""

    __tablename__ = 'controlpath_ids'
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'), index=True)
    cpid_type: orm.Mapped[str] = orm.mapped_column(sa.String(30))
    cpid_info: orm.Mapped[str] = orm.mapped_column(sa.String(255))

    device: orm.Mapped[Device] = orm.relationship(
        back_populates='controlpath_ids')

    def to_wire(self):
        """The control path id as agents and drivers speak of it."""
        return wire_form(self.cpid_type, self.cpid_info)


def wire_form(cpid_type, cpid_info):
    return {'cpid_type': cpid_type, 'cpid_info': json.loads(cpid_info)}


class Deployable(TimestampMixin, Base):
    """A unit that can be handed out: an FPGA region, a GPU, a MIG slice."""

    __tablename__ = 'deployables'
    __table_args__ = (
        sa.UniqueConstraint('device_id', 'name',
                            name='uniq_deployables0device_id0name'),
        sa.Index('deployables_created_at_id_idx', 'created_at', 'id'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    parent_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    root_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    num_accelerators: orm.Mapped[int] = orm.mapped_column(default=1)
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'), index=True)
    driver_name: orm.Mapped[str | None] = orm.mapped_column(sa.String(100))
    rp_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    bitstream_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))

    device: orm.Mapped[Device] = orm.relationship(back_populates='deployables')
    attributes: orm.Mapped[list['Attribute']] = orm.relationship(
        back_populates='deployable', cascade='all, delete-orphan',
        passive_deletes=True, order_by='Attribute.key')
    attach_handles: orm.Mapped[list['AttachHandle']] = orm.relationship(
        back_populates='deployable', cascade='all, delete-orphan',
        passive_deletes=True, order_by='AttachHandle.id')


class Attribute(TimestampMixin, Base):
    """Resource class and traits of a deployable (``rc``, ``trait0``...)."""

    __tablename__ = 'attributes'
    __table_args__ = (
        sa.UniqueConstraint('deployable_id', 'key',
                            name='uniq_attributes0deployable_id0key'),)
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    key: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    value: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    # 'driver' attributes follow the agent's reports; 'api' ones were added
    # by an operator and are left alone by inventory reports.
    source: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), default='driver', server_default='driver')

    deployable: orm.Mapped[Deployable] = orm.relationship(
        back_populates='attributes')


class AttachHandle(TimestampMixin, Base):
    """What a workload is given: a PCI function or an mdev."""

    __tablename__ = 'attach_handles'
    __table_args__ = (
        sa.UniqueConstraint('deployable_id', 'attach_type', 'attach_info',
                            name='uniq_attach_handles0deployable0info'),)
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    cpid_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('controlpath_ids.id', ondelete='CASCADE'))
    in_use: orm.Mapped[bool] = orm.mapped_column(default=False)
    # Given back by its workload, but its agent has not yet confirmed the
    # release (an FPGA region is erased then): not bindable meanwhile.
    release_pending: orm.Mapped[bool] = orm.mapped_column(default=False)
    attach_type: orm.Mapped[str] = orm.mapped_column(sa.String(30))
    attach_info: orm.Mapped[str] = orm.mapped_column(sa.String(255))

    deployable: orm.Mapped[Deployable] = orm.relationship(
        back_populates='attach_handles')
    controlpath: orm.Mapped[ControlpathID | None] = orm.relationship()


class DeviceProfile(TimestampMixin, Base):
    __tablename__ = 'device_profiles'
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    profile_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    description: orm.Mapped[str | None] = orm.mapped_column(sa.Text)


class ExtARQ(TimestampMixin, Base):
    """An accelerator request and how far its binding got."""

    __tablename__ = 'extended_accelerator_requests'
    __table_args__ = (
        sa.Index('extarq_instance_uuid_idx', 'instance_uuid'),
        sa.Index('extarq_project_id_idx', 'project_id'),
        sa.Index('extarq_created_at_id_idx', 'created_at', 'id'),
        # The liveness sweep of every conductor looks for BindStarted.
        sa.Index('extarq_state_idx', 'state'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(30))
    state_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    device_profile_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('device_profiles.id'))
    device_profile_group_id: orm.Mapped[int] = orm.mapped_column()
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    device_rp_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    instance_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    attach_handle_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('attach_handles.id', ondelete='SET NULL'))
    deployable_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='SET NULL'))
    # What the request counts against its project's quota.
    resource_class: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    # The identity of the current binding (db/arqs.py): work of an older
    # binding of this ARQ must not touch it.
    bind_attempt: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    # The conductor finishing the current binding: when it stops
    # heartbeating, any conductor fails the binding (db/conductors.py).
    conductor_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    # The current binding was scheduled by the conductor (standalone,
    # POST .../schedule), not asked for by Nova: no Nova event is sent
    # (db/scheduling.py, docs/scheduling.md).
    scheduled: orm.Mapped[bool] = orm.mapped_column(default=False)
    # The Placement allocation a standalone binding claimed: one of its
    # deployable's resource class on that provider for this consumer.
    # Kept until the consumer's allocations were brought back in line
    # after the binding ended (conductor/placement/claims.py).
    placement_consumer: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    placement_rp_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    # The end of the lease window the request's device is lent for, once
    # its notice was given (db/leases.py): the binding is undone
    # [leases] grace_seconds after it.
    lease_ends_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    # The start of a window of another project's lease of the request's
    # device, once its notice was given (db/leases.py): the binding is
    # undone [leases] grace_seconds after it.
    lease_starts_at: orm.Mapped[datetime.datetime | None] = (
        orm.mapped_column(sa.DateTime))
    # When a lease first needed the device of this Nova-bound request back
    # (a preemption, or the end of the lessee's window): Nova is asked to
    # release it ([leases] preemption_action) instead of the binding being
    # undone behind its back (db/leases.py, conductor/leases.py).
    release_asked_at: orm.Mapped[datetime.datetime | None] = (
        orm.mapped_column(sa.DateTime))


class Lease(TimestampMixin, Base):
    """Devices lent to a project for one window or a recurring one
    (db/leases.py, docs/leases.md)."""

    __tablename__ = 'leases'
    __table_args__ = (
        sa.Index('leases_created_at_id_idx', 'created_at', 'id'),
        sa.Index('leases_project_id_idx', 'project_id'),
        sa.Index('leases_state_idx', 'state'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    name: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    # The lessee.
    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    state: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    # Asked by profile (a resource class, traits as JSON {name: required |
    # forbidden}, a count) or by naming devices (then these are null).
    resource_class: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    traits: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # The first window, in local time of ``timezone``, and the RFC 5545
    # recurrence rule repeating it (null: one window).
    start_local: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)
    end_local: orm.Mapped[datetime.datetime] = orm.mapped_column(sa.DateTime)
    timezone: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    recurrence: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Windows are written (lease_windows) up to this time (UTC).
    planned_until: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)
    ended_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)

    devices: orm.Mapped[list['LeaseDevice']] = orm.relationship(
        cascade='all, delete-orphan', passive_deletes=True)


class LeaseDevice(Base):
    """A device a lease holds."""

    __tablename__ = 'lease_devices'
    __table_args__ = (
        sa.UniqueConstraint('lease_id', 'device_id',
                            name='uniq_lease_devices0lease_id0device_id'),
        sa.Index('lease_devices_device_id_idx', 'device_id'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    lease_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('leases.id', ondelete='CASCADE'))
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'))


class LeaseWindow(Base):
    """One occurrence of a lease, in UTC, and how far the conductors'
    lease periodic moved it (common/states.py LEASE_WINDOW)."""

    __tablename__ = 'lease_windows'
    __table_args__ = (
        sa.Index('lease_windows_lease_id_idx', 'lease_id'),
        sa.Index('lease_windows_state_ends_at_idx', 'state', 'ends_at'),
        sa.Index('lease_windows_starts_at_idx', 'starts_at'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    lease_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('leases.id', ondelete='CASCADE'))
    starts_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)
    ends_at: orm.Mapped[datetime.datetime] = orm.mapped_column(sa.DateTime)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(16))


class LeaseProject(Base):
    """A project that leased devices: the row its lease creations lock in
    turn, so that its lease limits hold across conductors
    (db/lease_limits.py)."""

    __tablename__ = 'lease_projects'
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    project_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), unique=True)


class Operation(TimestampMixin, Base):
    """Long work on a host that a client polls: programming a region."""

    __tablename__ = 'operations'
    __table_args__ = (
        sa.Index('operations_target_uuid_idx', 'target_uuid'),
        # The liveness sweep looks for unfinished operations.
        sa.Index('operations_state_idx', 'state'),
        sa.Index('operations_hostname_idx', 'hostname'))
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    type: orm.Mapped[str] = orm.mapped_column(sa.String(30))
    target_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    state: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    detail: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    # The conductor carrying the operation out (see ExtARQ.conductor_uuid).
    conductor_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    # Driver operations: the host they change, what was asked (JSON) and
    # the playbook's progress so far (JSON); their end goes in ``result``.
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    params: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    progress: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # What the work found, as JSON (a flash: firmware before and after; a
    # driver operation: the playbook's recap and versions).
    result: orm.Mapped[str | None] = orm.mapped_column(sa.Text)


class DeviceMetric(Base):
    """One heartbeat's reading of a device, kept for a bounded time."""

    __tablename__ = 'device_metrics'
    __table_args__ = (
        sa.Index('device_metrics_device_id_recorded_at_idx', 'device_id',
                 'recorded_at'),
        sa.Index('device_metrics_recorded_at_idx', 'recorded_at'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'))
    recorded_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)
    healthy: orm.Mapped[bool] = orm.mapped_column()
    utilization: orm.Mapped[str | None] = orm.mapped_column(sa.Text)


class HealthDrain(Base):
    """An automatic drain, kept for [health] breaker_window: what the
    drain circuit breaker counts (db/health.py)."""

    __tablename__ = 'health_drains'
    __table_args__ = (
        sa.Index('health_drains_drained_at_idx', 'drained_at'),
        sa.Index('health_drains_device_id_idx', 'device_id'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'))
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    drained_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)


class AvailabilityChange(Base):
    """A host whose offer of accelerators changed (inventory, status,
    health, a handle taken or given back, up or down): the availability
    feed's cursor is the newest id (db/availability.py)."""

    __tablename__ = 'availability_changes'
    __table_args__ = (
        sa.Index('availability_changes_changed_at_idx', 'changed_at'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    changed_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)


class QuotaUsage(Base):
    """Accelerators of one resource class a project holds (its ARQs)."""

    __tablename__ = 'quota_usages'
    __table_args__ = (
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_usages0project_id0resource'),)
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    resource: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    in_use: orm.Mapped[int] = orm.mapped_column(default=0)


class Bitstream(TimestampMixin, Base):
    """An image of the catalog (a PR bitstream or card firmware): what it
    declares, where its data is, and how far its upload got."""

    __tablename__ = 'bitstreams'
    __table_args__ = (
        sa.Index('bitstreams_created_at_id_idx', 'created_at', 'id'),
        # Profiles asking for a function resolve it to images.
        sa.Index('bitstreams_function_name_idx', 'function_name'),
        sa.Index('bitstreams_hardware_id_idx', 'hardware_id'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    description: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # None until given or declared; 'bitstream' when the upload ends
    # without either.
    kind: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    vendor: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    board: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    # What the image needs of its region (Intel PR interface id, Xilinx
    # shell interface uuid) and what the region reports once loaded (AFU
    # id, xclbin uuid); dashed lower-case UUIDs.
    interface_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    hardware_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    function_name: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    function_version: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64))
    status: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    status_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # The digest the client announced at creation; an upload of other
    # bytes is refused.
    expected_sha256: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64))
    size: orm.Mapped[int | None] = orm.mapped_column(sa.BigInteger)
    sha256: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    store: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    location: orm.Mapped[str | None] = orm.mapped_column(sa.String(1024))
    # The upload under way (common/states.py: a retry supersedes it).
    upload_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    user_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))


class ReadGeneration(Base):
    """The generation of one family of the API's read model (devices,
    deployables, device_profiles), bumped by every transaction that
    changes the family (db/generations.py)."""

    __tablename__ = 'read_generations'
    family: orm.Mapped[str] = orm.mapped_column(sa.String(32),
                                                primary_key=True)
    generation: orm.Mapped[int] = orm.mapped_column(sa.BigInteger,
                                                    default=0)


class Rollout(TimestampMixin, Base):
    """A change rolled across many targets in waves (db/rollouts.py)."""

    __tablename__ = 'rollouts'
    __table_args__ = (
        sa.Index('rollouts_state_idx', 'state'),
        sa.Index('rollouts_created_at_id_idx', 'created_at', 'id'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    name: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    # What is applied: kind bitstream (to regions; ``image`` a catalog
    # image uuid or a bitstream id the agents know) or firmware (to cards;
    # a catalog firmware image's uuid).
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    image: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    selector: orm.Mapped[str] = orm.mapped_column(sa.Text)      # JSON
    strategy: orm.Mapped[str] = orm.mapped_column(sa.Text)      # JSON
    # Driver rollouts: what each host's driver operation gets beside the
    # version (JSON: ``parameters`` of the family, ``timeout``).
    operation_options: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    # The conductor driving it; another takes it over when this one stops
    # heartbeating (db/rollouts.py ``claim``).
    conductor_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    current_wave: orm.Mapped[int] = orm.mapped_column(
        default=0, server_default='0')
    wave_started_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    waves: orm.Mapped[int] = orm.mapped_column(default=0, server_default='0')
    reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    finished_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)


class RolloutTarget(Base):
    """One region (or card) of a rollout, resolved when it was created."""

    __tablename__ = 'rollout_targets'
    __table_args__ = (
        sa.UniqueConstraint('rollout_id', 'target_uuid',
                            name='uniq_rollout_targets0rollout0target'),
        sa.Index('rollout_targets_rollout_state_idx', 'rollout_id', 'state',
                 'wave'),
        sa.Index('rollout_targets_operation_idx', 'operation_uuid'),
        # Every conductor's step looks for targets under way.
        sa.Index('rollout_targets_state_idx', 'state'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    rollout_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('rollouts.id', ondelete='CASCADE'))
    target_kind: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    target_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    device_id: orm.Mapped[int | None] = orm.mapped_column()
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    # 0 is the canary; waves 1.. follow.
    wave: orm.Mapped[int] = orm.mapped_column()
    state: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    # What it held before the change (what a rollback puts back) and what
    # the change put on it (what the read-back must show).
    last_known_good: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    applied: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    operation_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    rollback_operation_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    started_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    finished_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Times it was begun: more than one when its operation was interrupted
    # by its conductor's death and it was begun again (db/rollouts.py).
    attempts: orm.Mapped[int] = orm.mapped_column(default=0,
                                                  server_default='0')


class Change(Base):
    """One RPC call's committed write: who asked, under which request id,
    what it changed (db/changes.py). Written in the transaction that
    commits the write, so a change is recorded exactly when it was made."""

    __tablename__ = 'changes'
    __table_args__ = (
        sa.Index('changes_request_id_idx', 'request_id'),
        sa.Index('changes_created_at_idx', 'created_at'),
        sa.UniqueConstraint('uuid', name='uniq_changes0uuid'),
        sa.UniqueConstraint('call_id', name='uniq_changes0call_id'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    request_id: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    # The RPC call's own id (common/rpc.py call_within), unique: a call
    # the broker delivers twice writes once (db/change_recorder.py).
    call_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    method: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    user_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    # The tables its transactions wrote, comma-separated, and its target:
    # the ids the call named and the uuids of the rows it created.
    written: orm.Mapped[str] = orm.mapped_column(sa.String(1024))
    target: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # How many of the call's transactions committed: what a conductor
    # whose COMMIT lost its connection reads back (db/api.py writer).
    commits: orm.Mapped[int] = orm.mapped_column(
        default=1, server_default='1')
    # The call's answer as sent (JSON), for a caller whose answer the
    # broker lost (conductor/rpcapi.py); None until the call returned.
    reply: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, default=utcnow)


class QuotaLimit(Base):
    """A project's own limit of one resource class, set through the API
    (PUT /v2/quotas/{project_id}); it overrides [quota] default_limits.
    -1: unlimited. Read by db/quotas.reserve in the transaction that
    counts the usage."""

    __tablename__ = 'quota_limits'
    __table_args__ = (
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_limits0project_id0resource'),)
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    resource: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    hard_limit: orm.Mapped[int] = orm.mapped_column()


# Milliseconds kept on MariaDB too, whose DATETIME drops them.
PRECISE_TIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), 'mysql',
                                          'mariadb')


class UsageRecord(Base):
    """One binding of an ARQ to a device, from the commit of its bind to
    the commit of its unbind, release or deletion (db/usage.py): what
    usage accounting counts. Copies of the ARQ's and the device's
    identity, no foreign keys: deleting either keeps the record until
    [conductor] usage_retention forgets it."""

    __tablename__ = 'usage_records'
    __table_args__ = (
        sa.Index('usage_records_project_id_bound_at_idx', 'project_id',
                 'bound_at'),
        sa.Index('usage_records_arq_uuid_idx', 'arq_uuid'),
        sa.Index('usage_records_released_at_idx', 'released_at'),
    )
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    arq_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    instance_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    resource_class: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    model: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    device_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    bound_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        PRECISE_TIME)
    # NULL while the binding holds the device.
    released_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        PRECISE_TIME)


class UsageCarried(Base):
    """Device-milliseconds of the usage records retention pruned, per
    project, resource class and model, so that the usage counter
    (conductor/usage_metrics.py) never goes down when they are."""

    __tablename__ = 'usage_carried'
    __table_args__ = (
        sa.UniqueConstraint(
            'project_id', 'resource_class', 'model',
            name='uniq_usage_carried0project_id0resource_class0model'),)
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    resource_class: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    model: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    device_ms: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
