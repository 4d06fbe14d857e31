"""Hosts: whether Placement still has to be brought in line with them.

Hosts that exist already are marked, so the first sync after the upgrade
covers them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 02:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('hosts') as batch_op:
        batch_op.add_column(sa.Column('placement_dirty', sa.Integer(),
                                      nullable=False, server_default='0'))
    op.execute(sa.text('UPDATE hosts SET placement_dirty = 1'))
