"""Device health: the checks a driver could not make on the device.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 03:20:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('devices') as batch_op:
        batch_op.add_column(sa.Column('health_unchecked', sa.Text(),
                                      nullable=True))
