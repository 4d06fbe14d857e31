"""Heartbeats in batches: hosts' last contact and devices' health.

The conductor gathers heartbeats for a moment and writes them here in one
transaction, with a few statements per few hundred rows whatever the batch
holds (one multi-row INSERT, one UPDATE with a CASE per column), so
thousands of device readings a second cost a handful of round trips.
"""

import collections
import datetime
import json

import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.common import inventory as wire
from cyborg_like.common import read_model
from cyborg_like.db import api
from cyborg_like.db import drain_reasons
from cyborg_like.db import generations
from cyborg_like.db import health
from cyborg_like.db import host_changes
from cyborg_like.db import hosts
from cyborg_like.db import models

HEALTHY, UNHEALTHY = 'healthy', 'unhealthy'

# Rows per UPDATE statement (two parameters per row and column, one per
# row for the IN list).
_UPDATE_CHUNK = 500


Ingested = collections.namedtuple('Ingested', 'stored changed moves')


@api.retry_on_deadlock
def ingest(beats, retention, policy):
    """Apply ``beats``, the latest heartbeat of each host.

    Each beat is ``{'host', 'agent_version', 'inventory_hash', 'health':
    [DeviceHealth dicts], 'received_at': datetime}``; ``policy``: the
    drain breaker (conductor/drain_breaker.py). Returns the inventory
    hash the database holds for each host, the devices whose health
    changed as ``(uuid, hostname, new health, reasons)``, and the devices
    moved in or out of service (db/health.py).
    """
    if not beats:
        return Ingested({}, [], [])
    now = hosts.utcnow()
    with api.writer() as session:
        stored = _touch_hosts(session, beats)
        devices = _devices_of(session, [b['host'] for b in beats])
        with generations.unserved():
            # Readings only: SQL text, which leaves updated_at alone.
            changed, verdicts = _apply_health(session, beats, devices)
        if changed:
            # ARQ answers show the health of the device an ARQ holds.
            generations.touch(read_model.ARQS)
        # Drains and recoveries move updated_at: the API's copy hears.
        moves = health.apply(session, verdicts, policy, now)
        host_changes.mark_dirty(session, [c[1] for c in changed]
                                + [m.hostname for m in moves])
        cutoff = now - datetime.timedelta(seconds=retention)
        session.execute(sa.delete(models.DeviceMetric).where(
            models.DeviceMetric.recorded_at < cutoff))
    return Ingested(stored, changed, moves)


def _touch_hosts(session, beats):
    names = [b['host'] for b in beats]
    known = dict(session.execute(
        sa.select(models.Host.hostname, models.Host.id)
        .where(models.Host.hostname.in_(names))).all())
    new = [{'hostname': b['host'], 'created_at': b['received_at']}
           for b in beats if b['host'] not in known]
    if new:
        # Two conductors may add one host at once; the loser's transaction
        # fails and its batch is retried by the caller.
        session.execute(sa.insert(models.Host), new)
        known.update(session.execute(
            sa.select(models.Host.hostname, models.Host.id)
            .where(models.Host.hostname.in_(names))).all())
    _update_by_id(session, models.Host, [
        {'id': known[b['host']], 'last_heartbeat': b['received_at'],
         'agent_version': b['agent_version']} for b in beats])
    return dict(session.execute(
        sa.select(models.Host.hostname, models.Host.inventory_hash)
        .where(models.Host.hostname.in_(names))).all())


def _devices_of(session, names):
    """{(hostname, cpid_type, cpid_info as stored): device row}. The stored
    cpid_info is canonical JSON (db/inventory.py), so a reading's key is one
    small dump and a device's none."""
    rows = session.execute(
        sa.select(models.Device.id, models.Device.uuid,
                  models.Device.hostname, models.Device.health,
                  models.Device.health_reasons,
                  models.Device.health_unchecked,
                  models.Device.service_state,
                  models.ControlpathID.cpid_type,
                  models.ControlpathID.cpid_info)
        .join(models.ControlpathID)
        .where(models.Device.hostname.in_(names))).all()
    return {(r.hostname, r.cpid_type, r.cpid_info): r for r in rows}


def _json_list(items):
    # Most readings have no reasons and nothing unchecked.
    return json.dumps(items) if items else '[]'


def _apply_health(session, beats, devices):
    # Every reading moves utilization and its time; health and its reasons
    # are written only where they changed (rarely): fewer values to send.
    readings, health_rows, metrics, changed, verdicts = [], [], [], [], []
    for beat in beats:
        for reading in beat.get('health') or ():
            cpid = reading['controlpath_id']
            device = devices.get((beat['host'], cpid['cpid_type'],
                                  wire.canonical(cpid['cpid_info'])))
            if device is None:
                continue    # not reported yet; the inventory will follow
            health = HEALTHY if reading['healthy'] else UNHEALTHY
            utilization = json.dumps(reading.get('utilization') or {})
            reasons = reading.get('reasons') or []
            readings.append({'id': device.id, 'utilization': utilization,
                             'health_updated_at': beat['received_at']})
            row = {'id': device.id, 'health': health,
                   'health_reasons': _json_list(reasons),
                   'health_unchecked': _json_list(reading.get('unchecked'))}
            if (health, row['health_reasons'], row['health_unchecked']) != (
                    device.health, device.health_reasons,
                    device.health_unchecked):
                health_rows.append(row)
            metrics.append({
                'device_id': device.id, 'recorded_at': beat['received_at'],
                'healthy': reading['healthy'], 'utilization': utilization})
            verdicts.append((device.id, reading['healthy'], reasons,
                             device.service_state))
            if health != device.health:
                changed.append((device.uuid, beat['host'], health, reasons))
    if readings:
        # Readings have their own time (health_updated_at): a device's
        # updated_at is its record's, which the API lists and its read
        # model serves, and would otherwise move every heartbeat.
        _update_by_id(session, models.Device, readings, touch=False)
        if health_rows:
            _update_by_id(session, models.Device, health_rows, touch=False)
        # The table's insert, not the ORM's bulk insert: no per-row
        # bookkeeping for rows nobody loads.
        session.execute(models.DeviceMetric.__table__.insert(), metrics)
    return changed, verdicts


def _update_by_id(session, model, rows, touch=True):
    """UPDATE rows of ``model`` by id, each dict of ``rows`` holding ``id``
    and the same columns: one statement per chunk of rows, a CASE on the id
    per column, and ``updated_at`` set as the ORM would when ``touch``.

    An executemany of an UPDATE costs a round trip per row with PyMySQL
    (it batches INSERTs only): a flush of 16,000 readings took about 20 s
    on MariaDB while the conductor was busy with RPC (see
    docs/benchmarks.md). Built as SQLAlchemy expressions, such a statement
    costs about 100 us of CPU per row (a bound parameter object per value),
    so it is SQL text with the driver's own placeholders, the values going
    through the column types' bind processors.
    """
    conn = session.connection()
    dialect = conn.dialect
    mark = '?' if dialect.paramstyle == 'qmark' else '%s'
    quote = dialect.identifier_preparer.quote
    table = model.__table__
    names = [name for name in rows[0] if name != 'id']
    process = {name: _bind_processor(table.c[name], dialect)
               for name in names + ['id', 'updated_at']}
    now = process['updated_at'](hosts.utcnow()) if touch else None
    for start in range(0, len(rows), _UPDATE_CHUNK):
        chunk = rows[start:start + _UPDATE_CHUNK]
        ids = [process['id'](row['id']) for row in chunk]
        whens = ' '.join(['WHEN %s THEN %s' % (mark, mark)] * len(chunk))
        sets, params = [], []
        for name in names:
            sets.append('%s = CASE %s %s END' % (quote(name), quote('id'),
                                                  whens))
            to_db = process[name]
            for row_id, row in zip(ids, chunk):
                params += [row_id, to_db(row[name])]
        if touch:
            sets.append('%s = %s' % (quote('updated_at'), mark))
            params.append(now)
        params += ids
        conn.exec_driver_sql('UPDATE %s SET %s WHERE %s IN (%s)' % (
            quote(table.name), ', '.join(sets), quote('id'),
            ', '.join([mark] * len(chunk))), tuple(params))


def _bind_processor(column, dialect):
    processor = column.type.dialect_impl(dialect).bind_processor(dialect)
    return processor or (lambda value: value)


def device_health(uuid, history_limit):
    """The latest reading of a device and its recent history, newest
    first."""
    with api.reader() as session:
        device = session.scalars(sa.select(models.Device).where(
            models.Device.uuid == uuid)).first()
        if device is None:
            raise exception.DeviceNotFound(uuid=uuid)
        history = session.scalars(
            sa.select(models.DeviceMetric)
            .where(models.DeviceMetric.device_id == device.id)
            .order_by(models.DeviceMetric.recorded_at.desc(),
                      models.DeviceMetric.id.desc())
            .limit(history_limit)).all()
        return {
            'device_uuid': device.uuid,
            'health': device.health,
            'service_state': device.service_state,
            'healthy_checks': device.healthy_checks,
            'service_changed_at': api.isotime(device.service_changed_at),
            'reasons': json.loads(device.health_reasons or '[]'),
            'unchecked': json.loads(device.health_unchecked or '[]'),
            'utilization': json.loads(device.utilization or '{}'),
            'updated_at': api.isotime(device.health_updated_at),
            # Every cause, not its readings' only (conductor RPC 1.26).
            'drain_reasons': drain_reasons.of_devices(
                session, [device])[device.uuid],
            'history': [{'recorded_at': api.isotime(m.recorded_at),
                         'healthy': m.healthy,
                         'utilization': json.loads(m.utilization or '{}')}
                        for m in history],
        }
