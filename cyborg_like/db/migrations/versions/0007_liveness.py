"""Liveness: conductors' heartbeats, the owner of each binding and
operation, the identity of each binding attempt, and attach handles whose
release (an FPGA erase) the agent has not confirmed yet.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 04:40:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'conductors',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('hostname', sa.String(255), nullable=False),
        sa.Column('last_heartbeat', sa.DateTime, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime),
        sa.UniqueConstraint('uuid'))
    with op.batch_alter_table('extended_accelerator_requests') as batch_op:
        batch_op.add_column(sa.Column('bind_attempt', sa.String(36)))
        batch_op.add_column(sa.Column('conductor_uuid', sa.String(36)))
        # Every conductor's liveness sweep selects by state, with locks.
        batch_op.create_index('extarq_state_idx', ['state'])
    with op.batch_alter_table('operations') as batch_op:
        batch_op.add_column(sa.Column('conductor_uuid', sa.String(36)))
        batch_op.create_index('operations_state_idx', ['state'])
    # Existing handles get false; the default then goes, as in the model.
    with op.batch_alter_table('attach_handles') as batch_op:
        batch_op.add_column(sa.Column('release_pending', sa.Boolean,
                                      nullable=False,
                                      server_default=sa.false()))
    with op.batch_alter_table('attach_handles') as batch_op:
        batch_op.alter_column('release_pending', server_default=None)
