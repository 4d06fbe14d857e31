"""Devices and deployables lose ``generation``: it was incremented on every
change but never compared, returned or sent; see the commit for why it is
dropped rather than used.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 07:20:00
"""

from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade():
    for table in ('devices', 'deployables'):
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_column('generation')
