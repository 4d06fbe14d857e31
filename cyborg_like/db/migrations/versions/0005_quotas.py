"""Quota usage per project and resource class; the class of each ARQ.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 02:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'quota_usages',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.String(length=255), nullable=False),
        sa.Column('resource', sa.String(length=255), nullable=False),
        sa.Column('in_use', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_usages0project_id0resource'),
    )
    with op.batch_alter_table('extended_accelerator_requests') as batch_op:
        batch_op.add_column(sa.Column('resource_class', sa.String(length=255),
                                      nullable=True))
