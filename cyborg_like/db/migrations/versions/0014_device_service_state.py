"""Devices in service: drained or flagged by their health, recovery
counted, and the automatic drains the circuit breaker counts.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 23:30:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('devices') as batch_op:
        batch_op.add_column(sa.Column('service_state', sa.String(16),
                                      nullable=False,
                                      server_default='serving'))
        batch_op.add_column(sa.Column('healthy_checks', sa.Integer(),
                                      nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('service_changed_at', sa.DateTime(),
                                      nullable=True))
    op.create_table(
        'health_drains',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('device_id', sa.Integer(),
                  sa.ForeignKey('devices.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('hostname', sa.String(255), nullable=False),
        sa.Column('drained_at', sa.DateTime(), nullable=False),
    )
    op.create_index('health_drains_drained_at_idx', 'health_drains',
                    ['drained_at'])
    op.create_index('health_drains_device_id_idx', 'health_drains',
                    ['device_id'])
    # Devices already unhealthy were refused at bind before: keep them so.
    op.execute("UPDATE devices SET service_state = 'drained' "
               "WHERE health = 'unhealthy'")
