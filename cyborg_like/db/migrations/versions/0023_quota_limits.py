"""Per-project quota limits set through the API (PUT /v2/quotas/{project}):
one row per (project, resource class), overriding [quota] default_limits.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 00:30:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'quota_limits',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.String(length=255), nullable=False),
        sa.Column('resource', sa.String(length=255), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_limits0project_id0resource'),
    )
