"""The availability feed's change log: hosts whose offer changed.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 23:10:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'availability_changes',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('hostname', sa.String(255), nullable=False),
        sa.Column('changed_at', sa.DateTime(), nullable=False),
    )
    op.create_index('availability_changes_changed_at_idx',
                    'availability_changes', ['changed_at'])
