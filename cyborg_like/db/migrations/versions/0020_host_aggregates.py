"""Hosts record the Placement aggregates of their compute node provider
(the availability feed groups by them, rollouts select by them).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 05:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('hosts') as batch_op:
        batch_op.add_column(sa.Column('aggregates', sa.Text))
