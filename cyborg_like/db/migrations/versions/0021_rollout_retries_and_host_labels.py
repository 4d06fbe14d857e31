"""Driver rollouts keep what each host's driver operation gets beyond the
version: the family's parameters (package, repository, vGPU manager) and
the operation's timeout. Rollout targets count the times they were begun
(a target whose conductor died mid-operation is begun again, a bounded
number of times). Hosts carry free-form labels of the operators' (rollouts
select by them).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26 08:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rollouts') as batch_op:
        batch_op.add_column(sa.Column('operation_options', sa.Text))
    with op.batch_alter_table('hosts') as batch_op:
        batch_op.add_column(sa.Column('labels', sa.Text))
    with op.batch_alter_table('rollout_targets') as batch_op:
        batch_op.add_column(sa.Column('attempts', sa.Integer,
                                      nullable=False, server_default='0'))
