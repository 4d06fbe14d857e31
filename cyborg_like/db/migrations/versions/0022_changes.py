"""The change record: one row per RPC call whose write was committed, with
the request id of the API request that made it, who asked (user and
project), what it changed (the tables written, the objects the call
named and the rows it created) and when. A client answered 503 finds by
its request id whether the write was carried out after all (issue 28),
and an operator reads who changed what (issue 27).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 00:20:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'changes',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('request_id', sa.String(64), nullable=False),
        sa.Column('method', sa.String(64), nullable=False),
        sa.Column('user_id', sa.String(64)),
        sa.Column('project_id', sa.String(64)),
        sa.Column('written', sa.String(1024), nullable=False),
        sa.Column('target', sa.Text),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.UniqueConstraint('uuid', name='uniq_changes0uuid'),
    )
    op.create_index('changes_request_id_idx', 'changes', ['request_id'])
    op.create_index('changes_created_at_idx', 'changes', ['created_at'])
