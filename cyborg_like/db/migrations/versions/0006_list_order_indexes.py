"""Indexes for the default list order, so every page costs the same.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 03:20:00
"""

from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

_INDEXES = (('devices', 'devices_created_at_id_idx'),
            ('deployables', 'deployables_created_at_id_idx'),
            ('extended_accelerator_requests', 'extarq_created_at_id_idx'))


def upgrade():
    for table, name in _INDEXES:
        with op.batch_alter_table(table) as batch_op:
            batch_op.create_index(name, ['created_at', 'id'], unique=False)
