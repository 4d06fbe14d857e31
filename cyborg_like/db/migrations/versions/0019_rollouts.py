"""Fleet rollouts and their targets (docs/rollouts.md).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 04:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'rollouts',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('image', sa.String(255), nullable=False),
        sa.Column('selector', sa.Text(), nullable=False),
        sa.Column('strategy', sa.Text(), nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('conductor_uuid', sa.String(36), nullable=True),
        sa.Column('current_wave', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.Column('wave_started_at', sa.DateTime(), nullable=True),
        sa.Column('waves', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.Index('rollouts_state_idx', 'state'),
        sa.Index('rollouts_created_at_id_idx', 'created_at', 'id'),
    )
    op.create_table(
        'rollout_targets',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('rollout_id', sa.Integer(),
                  sa.ForeignKey('rollouts.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('target_kind', sa.String(16), nullable=False),
        # A region's or card's uuid; a host's name (driver rollouts).
        sa.Column('target_uuid', sa.String(255), nullable=False),
        sa.Column('device_id', sa.Integer(), nullable=True),
        sa.Column('hostname', sa.String(255), nullable=False),
        sa.Column('wave', sa.Integer(), nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('last_known_good', sa.String(255), nullable=True),
        sa.Column('applied', sa.String(255), nullable=True),
        sa.Column('operation_uuid', sa.String(36), nullable=True),
        sa.Column('rollback_operation_uuid', sa.String(36), nullable=True),
        sa.Column('started_at', sa.DateTime(), nullable=True),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.UniqueConstraint('rollout_id', 'target_uuid',
                            name='uniq_rollout_targets0rollout0target'),
        sa.Index('rollout_targets_rollout_state_idx', 'rollout_id',
                 'state', 'wave'),
        sa.Index('rollout_targets_operation_idx', 'operation_uuid'),
        # Every conductor's step looks for targets under way.
        sa.Index('rollout_targets_state_idx', 'state'),
    )


def downgrade():
    op.drop_table('rollout_targets')
    op.drop_table('rollouts')
