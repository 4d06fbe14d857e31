"""SQLAlchemy models: Cyborg's data model plus our hosts.

Only the conductor imports this package. JSON documents (board info, control
path and attach info, profile groups) are stored as text, as Cyborg does, so
the schema is the same on SQLite, MariaDB and PostgreSQL.
"""

import datetime
import json

import sqlalchemy as sa
from sqlalchemy import orm


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    pass


class TimestampMixin:
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, default=_utcnow, nullable=False)
    updated_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, onupdate=_utcnow)


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
    utilization: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    health_updated_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    # Set while a driver operation changes this device's driver, and kept
    # after one that failed: not bindable, Placement inventory reserved.
    drained_by: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    drain_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)

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
