"""Operations (programming a region) and the source of attributes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 01:40:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'operations',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('type', sa.String(length=30), nullable=False),
        sa.Column('target_uuid', sa.String(length=36), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('detail', sa.Text(), nullable=True),
        sa.Column('project_id', sa.String(length=255), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('uuid'),
    )
    with op.batch_alter_table('operations') as batch_op:
        batch_op.create_index('operations_target_uuid_idx', ['target_uuid'],
                              unique=False)
    with op.batch_alter_table('attributes') as batch_op:
        batch_op.add_column(sa.Column('source', sa.String(length=16),
                                      nullable=False,
                                      server_default='driver'))
