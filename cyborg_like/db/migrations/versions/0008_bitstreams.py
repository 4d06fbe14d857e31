"""The bitstream and firmware catalog.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 07:10:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'bitstreams',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('description', sa.Text),
        sa.Column('kind', sa.String(16)),
        sa.Column('vendor', sa.String(16)),
        sa.Column('board', sa.String(16)),
        sa.Column('interface_id', sa.String(36)),
        sa.Column('hardware_id', sa.String(36)),
        sa.Column('function_name', sa.String(255)),
        sa.Column('function_version', sa.String(64)),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('status_reason', sa.Text),
        sa.Column('expected_sha256', sa.String(64)),
        sa.Column('size', sa.BigInteger),
        sa.Column('sha256', sa.String(64)),
        sa.Column('store', sa.String(64)),
        sa.Column('location', sa.String(1024)),
        sa.Column('upload_id', sa.String(36)),
        sa.Column('project_id', sa.String(255)),
        sa.Column('user_id', sa.String(255)),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime),
        sa.UniqueConstraint('uuid'))
    op.create_index('bitstreams_created_at_id_idx', 'bitstreams',
                    ['created_at', 'id'])
    op.create_index('bitstreams_function_name_idx', 'bitstreams',
                    ['function_name'])
    op.create_index('bitstreams_hardware_id_idx', 'bitstreams',
                    ['hardware_id'])
