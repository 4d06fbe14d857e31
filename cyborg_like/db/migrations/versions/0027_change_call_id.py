"""Changes name the RPC call that made them, once (issue 32). A RabbitMQ
node lost after a conductor took a call, before the broker had its
acknowledgement, delivers the call again, to another conductor: the
write was done twice (tests/cluster, ``leader``: two ARQs for one
create). The API gives each call a ``call_id`` (common/rpc.py); the change
log holds it under a unique key, so a second delivery's first write
fails and is rolled back whole, and its caller is answered from the log
(db/change_recorder.py). Rows written before the upgrade have none.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28 14:20:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('changes') as batch_op:
        batch_op.add_column(sa.Column('call_id', sa.String(36),
                                      nullable=True))
        batch_op.create_unique_constraint('uniq_changes0call_id',
                                          ['call_id'])
