"""Driver operations: an operation may target a host (its hostname) and
carry its parameters and progress (its result has a column since 0009);
devices may be drained by one; hosts record their installed driver
versions.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 07:15:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('operations') as batch_op:
        batch_op.add_column(sa.Column('hostname', sa.String(255)))
        batch_op.add_column(sa.Column('params', sa.Text))
        batch_op.add_column(sa.Column('progress', sa.Text))
        # One driver operation per host at a time is checked by hostname.
        batch_op.create_index('operations_hostname_idx', ['hostname'])
    with op.batch_alter_table('devices') as batch_op:
        batch_op.add_column(sa.Column('drained_by', sa.String(36)))
        batch_op.add_column(sa.Column('drain_reason', sa.Text))
    with op.batch_alter_table('hosts') as batch_op:
        batch_op.add_column(sa.Column('driver_versions', sa.Text))
