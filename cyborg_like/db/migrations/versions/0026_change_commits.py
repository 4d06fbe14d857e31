"""Changes count their call's committed transactions and keep its answer
(issue 32). A conductor whose COMMIT lost its connection (a Galera node
killed as it committed) reads ``commits`` back through another
connection to learn whether that transaction was committed after all
(db/api.py ``writer``); an API whose call got no answer (the broker node
holding its reply queue died) reads ``reply``, the answer the conductor
sent, before it would answer 503 (conductor/rpcapi.py). Rows written
before the upgrade count 1 and keep no answer.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 10:30:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('changes') as batch_op:
        batch_op.add_column(sa.Column('commits', sa.Integer(),
                                      nullable=False, server_default='1'))
        batch_op.add_column(sa.Column('reply', sa.Text(), nullable=True))
