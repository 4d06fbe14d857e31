"""Standalone scheduling: which bindings the conductor chose itself, and
the Placement allocation such a binding claimed.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 10:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('extended_accelerator_requests') as batch_op:
        batch_op.add_column(sa.Column('scheduled', sa.Boolean(),
                                      nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('placement_consumer', sa.String(36),
                                      nullable=True))
        batch_op.add_column(sa.Column('placement_rp_uuid', sa.String(36),
                                      nullable=True))
    # Existing requests get false; the default then goes, as in the model
    # (MariaDB and PostgreSQL spell a boolean default differently).
    with op.batch_alter_table('extended_accelerator_requests') as batch_op:
        batch_op.alter_column('scheduled', server_default=None)
