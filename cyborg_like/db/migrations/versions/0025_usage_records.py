"""Usage records (issue 33): one row per binding of an ARQ to a device,
opened in the transaction that commits the bind and closed in the one
that unbinds, releases or deletes it, so that device-seconds per
project, instance, resource class, model and host are exact
(db/usage.py); usage_carried, the device-milliseconds of the records
retention pruned, so that the usage counter never goes down. No foreign
keys: deleting an ARQ or a device loses no recorded usage; [conductor]
usage_retention prunes. Bindings held at the upgrade are counted from
the upgrade on (their bind times were not recorded).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 03:30:00
"""

import datetime

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None

# Milliseconds kept on MariaDB too, whose DATETIME drops them.
PRECISE_TIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), 'mysql',
                                          'mariadb')


def upgrade():
    op.create_table(
        'usage_records',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('arq_uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255)),
        sa.Column('instance_uuid', sa.String(36)),
        sa.Column('resource_class', sa.String(255)),
        sa.Column('model', sa.String(255)),
        sa.Column('hostname', sa.String(255)),
        sa.Column('device_uuid', sa.String(36)),
        sa.Column('bound_at', PRECISE_TIME, nullable=False),
        sa.Column('released_at', PRECISE_TIME),
    )
    op.create_index('usage_records_project_id_bound_at_idx',
                    'usage_records', ['project_id', 'bound_at'])
    op.create_index('usage_records_arq_uuid_idx', 'usage_records',
                    ['arq_uuid'])
    op.create_index('usage_records_released_at_idx', 'usage_records',
                    ['released_at'])
    op.create_table(
        'usage_carried',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource_class', sa.String(255), nullable=False),
        sa.Column('model', sa.String(255), nullable=False),
        sa.Column('device_ms', sa.BigInteger, nullable=False),
        sa.UniqueConstraint(
            'project_id', 'resource_class', 'model',
            name='uniq_usage_carried0project_id0resource_class0model'),
    )
    _open_held()


def _open_held():
    """A record, from now, for every ARQ Bound at the upgrade."""
    arq = sa.table(
        'extended_accelerator_requests', sa.column('uuid'),
        sa.column('state'), sa.column('project_id'),
        sa.column('instance_uuid'), sa.column('resource_class'),
        sa.column('deployable_id'))
    deployable = sa.table('deployables', sa.column('id'),
                          sa.column('device_id'))
    device = sa.table('devices', sa.column('id'), sa.column('uuid'),
                      sa.column('model'), sa.column('hostname'))
    usage = sa.table(
        'usage_records', sa.column('arq_uuid'), sa.column('project_id'),
        sa.column('instance_uuid'), sa.column('resource_class'),
        sa.column('model'), sa.column('hostname'),
        sa.column('device_uuid'), sa.column('bound_at', PRECISE_TIME))
    now = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)
    held = (
        sa.select(arq.c.uuid, arq.c.project_id, arq.c.instance_uuid,
                  arq.c.resource_class, device.c.model, device.c.hostname,
                  device.c.uuid, sa.literal(now, PRECISE_TIME))
        .select_from(arq)
        .outerjoin(deployable, deployable.c.id == arq.c.deployable_id)
        .outerjoin(device, device.c.id == deployable.c.device_id)
        .where(arq.c.state == 'Bound'))
    op.execute(usage.insert().from_select(
        ['arq_uuid', 'project_id', 'instance_uuid', 'resource_class',
         'model', 'hostname', 'device_uuid', 'bound_at'], held))
