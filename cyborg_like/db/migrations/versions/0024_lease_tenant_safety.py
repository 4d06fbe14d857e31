"""Tenant safety of leases (issue 27): lease_projects, one row per
project that leased devices, which its lease creations lock in turn so
that the per-project lease limits ([leases] project_max_devices,
project_max_device_hours) hold across conductors (db/lease_limits.py);
extended_accelerator_requests.release_asked_at, when a lease first needed
the device of a Nova-bound request back and Nova was asked to release it
([leases] preemption_action) rather than the binding undone behind its
back.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 00:40:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'lease_projects',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False,
                  unique=True),
    )
    op.add_column('extended_accelerator_requests',
                  sa.Column('release_asked_at', sa.DateTime))
