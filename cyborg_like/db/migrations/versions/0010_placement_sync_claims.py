"""Hosts: when Placement was last synced with each, and which conductor
is syncing it now, so that conductors share the sync instead of each
repeating it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 07:20:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('hosts') as batch_op:
        batch_op.add_column(sa.Column('placement_synced_at', sa.DateTime))
        batch_op.add_column(sa.Column('placement_claimed_until',
                                      sa.DateTime))
