"""What a finished operation found: a firmware flash records the device's
firmware before and after (JSON), and the device status to restore.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 07:15:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('operations') as batch_op:
        batch_op.add_column(sa.Column('result', sa.Text))
