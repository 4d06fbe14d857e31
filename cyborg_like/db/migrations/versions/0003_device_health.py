"""Device health and utilization: latest on the device, history beside.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 01:50:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('devices') as batch_op:
        batch_op.add_column(sa.Column('health', sa.String(length=16),
                                      nullable=False,
                                      server_default='unknown'))
        batch_op.add_column(sa.Column('health_reasons', sa.Text(),
                                      nullable=True))
        batch_op.add_column(sa.Column('utilization', sa.Text(),
                                      nullable=True))
        batch_op.add_column(sa.Column('health_updated_at', sa.DateTime(),
                                      nullable=True))
    op.create_table(
        'device_metrics',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('device_id', sa.Integer(), nullable=False),
        sa.Column('recorded_at', sa.DateTime(), nullable=False),
        sa.Column('healthy', sa.Boolean(), nullable=False),
        sa.Column('utilization', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['device_id'], ['devices.id'],
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('device_metrics') as batch_op:
        batch_op.create_index('device_metrics_device_id_recorded_at_idx',
                              ['device_id', 'recorded_at'], unique=False)
        batch_op.create_index('device_metrics_recorded_at_idx',
                              ['recorded_at'], unique=False)
