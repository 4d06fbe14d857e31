"""The read model's generations: one row per family, bumped by every
transaction that changes the family.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 04:30:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade():
    table = op.create_table(
        'read_generations',
        sa.Column('family', sa.String(32), primary_key=True),
        sa.Column('generation', sa.BigInteger(), nullable=False),
    )
    op.bulk_insert(table, [{'family': family, 'generation': 0}
                           for family in ('devices', 'deployables',
                                          'device_profiles')])
