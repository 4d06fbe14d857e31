"""Device leases: leases, the devices they hold, their windows, and the
end (for the lessee) or start (for another project holding it) of the
window an ARQ's device is lent for.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 04:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'leases',
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('resource_class', sa.String(255), nullable=True),
        sa.Column('traits', sa.Text(), nullable=True),
        sa.Column('start_local', sa.DateTime(), nullable=False),
        sa.Column('end_local', sa.DateTime(), nullable=False),
        sa.Column('timezone', sa.String(64), nullable=False),
        sa.Column('recurrence', sa.Text(), nullable=True),
        sa.Column('planned_until', sa.DateTime(), nullable=False),
        sa.Column('ended_at', sa.DateTime(), nullable=True),
    )
    op.create_index('leases_created_at_id_idx', 'leases',
                    ['created_at', 'id'])
    op.create_index('leases_project_id_idx', 'leases', ['project_id'])
    op.create_index('leases_state_idx', 'leases', ['state'])
    op.create_table(
        'lease_devices',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('lease_id', sa.Integer(),
                  sa.ForeignKey('leases.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('device_id', sa.Integer(),
                  sa.ForeignKey('devices.id', ondelete='CASCADE'),
                  nullable=False),
        sa.UniqueConstraint('lease_id', 'device_id',
                            name='uniq_lease_devices0lease_id0device_id'),
    )
    op.create_index('lease_devices_device_id_idx', 'lease_devices',
                    ['device_id'])
    op.create_table(
        'lease_windows',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('lease_id', sa.Integer(),
                  sa.ForeignKey('leases.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('starts_at', sa.DateTime(), nullable=False),
        sa.Column('ends_at', sa.DateTime(), nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
    )
    op.create_index('lease_windows_lease_id_idx', 'lease_windows',
                    ['lease_id'])
    op.create_index('lease_windows_state_ends_at_idx', 'lease_windows',
                    ['state', 'ends_at'])
    op.create_index('lease_windows_starts_at_idx', 'lease_windows',
                    ['starts_at'])
    with op.batch_alter_table('extended_accelerator_requests') as batch_op:
        batch_op.add_column(sa.Column('lease_ends_at', sa.DateTime(),
                                      nullable=True))
        batch_op.add_column(sa.Column('lease_starts_at', sa.DateTime(),
                                      nullable=True))
