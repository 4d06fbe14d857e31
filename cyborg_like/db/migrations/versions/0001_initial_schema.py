"""Initial schema: Cyborg's data model plus hosts.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 01:21:28.532414
"""

from alembic import op
import sqlalchemy as sa


revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "device_profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("profile_json", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("uuid"),
    )
    op.create_table(
        "devices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("type", sa.String(length=30), nullable=False),
        sa.Column("vendor", sa.String(length=255), nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("std_board_info", sa.Text(), nullable=True),
        sa.Column("vendor_board_info", sa.Text(), nullable=True),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid"),
    )
    with op.batch_alter_table("devices", schema=None) as batch_op:
        batch_op.create_index(
            "devices_hostname_idx", ["hostname"], unique=False
        )

    op.create_table(
        "hosts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("last_heartbeat", sa.DateTime(), nullable=True),
        sa.Column("agent_version", sa.String(length=64), nullable=True),
        sa.Column("inventory_hash", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("hostname"),
    )
    op.create_table(
        "controlpath_ids",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("cpid_type", sa.String(length=30), nullable=False),
        sa.Column("cpid_info", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["device_id"], ["devices.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid"),
    )
    with op.batch_alter_table("controlpath_ids", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_controlpath_ids_device_id"),
            ["device_id"],
            unique=False,
        )

    op.create_table(
        "deployables",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("root_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("num_accelerators", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("driver_name", sa.String(length=100), nullable=True),
        sa.Column("rp_uuid", sa.String(length=36), nullable=True),
        sa.Column("bitstream_id", sa.String(length=36), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["device_id"], ["devices.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["deployables.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["root_id"], ["deployables.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "device_id", "name", name="uniq_deployables0device_id0name"
        ),
        sa.UniqueConstraint("uuid"),
    )
    with op.batch_alter_table("deployables", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_deployables_device_id"), ["device_id"], unique=False
        )

    op.create_table(
        "attach_handles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("deployable_id", sa.Integer(), nullable=False),
        sa.Column("cpid_id", sa.Integer(), nullable=True),
        sa.Column("in_use", sa.Boolean(), nullable=False),
        sa.Column("attach_type", sa.String(length=30), nullable=False),
        sa.Column("attach_info", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cpid_id"], ["controlpath_ids.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["deployable_id"], ["deployables.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "deployable_id",
            "attach_type",
            "attach_info",
            name="uniq_attach_handles0deployable0info",
        ),
        sa.UniqueConstraint("uuid"),
    )
    op.create_table(
        "attributes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("deployable_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["deployable_id"], ["deployables.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "deployable_id", "key", name="uniq_attributes0deployable_id0key"
        ),
        sa.UniqueConstraint("uuid"),
    )
    op.create_table(
        "extended_accelerator_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("state", sa.String(length=30), nullable=False),
        sa.Column("state_reason", sa.Text(), nullable=True),
        sa.Column("device_profile_id", sa.Integer(), nullable=False),
        sa.Column("device_profile_group_id", sa.Integer(), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=True),
        sa.Column("device_rp_uuid", sa.String(length=36), nullable=True),
        sa.Column("instance_uuid", sa.String(length=36), nullable=True),
        sa.Column("project_id", sa.String(length=255), nullable=True),
        sa.Column("attach_handle_id", sa.Integer(), nullable=True),
        sa.Column("deployable_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["attach_handle_id"], ["attach_handles.id"], ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["deployable_id"], ["deployables.id"], ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["device_profile_id"],
            ["device_profiles.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid"),
    )
    with op.batch_alter_table(
        "extended_accelerator_requests", schema=None
    ) as batch_op:
        batch_op.create_index(
            "extarq_instance_uuid_idx", ["instance_uuid"], unique=False
        )
        batch_op.create_index(
            "extarq_project_id_idx", ["project_id"], unique=False
        )
