"""Usage accounting: device-seconds per project, instance, resource
class, model and host (issue 33; docs/usage.md).

A binding is counted from the commit of its bind (BindStarted -> Bound)
to the commit of whatever ends it (unbind, a lease's unbinding, deletion
of the bound ARQ): ``open_record`` and ``close_records`` are called
inside those very transactions (db/arqs.py), so a record exists exactly
when the binding did and its times are the conductor's, not a sampler's.
A record copies the ARQ's and the device's identity and has no foreign
key: deleting either loses no usage. Records closed longer ago than
[conductor] usage_retention are pruned; what they counted is carried
into usage_carried so that the Prometheus counter never goes down.

Times are kept to the millisecond and durations are summed in SQL as
integer milliseconds (``_EpochMs``): exact on SQLite, MariaDB and
PostgreSQL alike, in one query whatever the number of records.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import functions

from cyborg_like.common import exception
from cyborg_like.common import usage as usage_dimensions
from cyborg_like.db import api
from cyborg_like.db import models

USAGE = models.UsageRecord
CARRIED = models.UsageCarried
EPOCH = datetime.datetime(1970, 1, 1)
MS = datetime.timedelta(milliseconds=1)
# The dimensions a summary groups by: (the API's name, the column, the
# answer's key).
# The column of each dimension of common/usage.py.
COLUMNS = {'project': USAGE.project_id, 'instance': USAGE.instance_uuid,
           'resource_class': USAGE.resource_class, 'model': USAGE.model,
           'host': USAGE.hostname}
DEFAULT_GROUP_BY = usage_dimensions.DEFAULT_GROUP_BY
# The counter's labels: what a chargeback prices.
COUNTER_KEYS = ('project_id', 'resource_class', 'model')

_clock = models.utcnow


def utcnow():
    """Now, to the millisecond, by the clock the records are written
    with."""
    now = _clock()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def set_clock(clock=None):
    """Count by ``clock`` (a callable giving naive UTC datetimes) rather
    than the wall clock: tests check the figures by hand. None puts the
    wall clock back."""
    global _clock
    _clock = clock or models.utcnow


def to_ms(when):
    """Milliseconds since 1970 of a naive UTC datetime."""
    return (when - EPOCH) // MS


class _EpochMs(functions.FunctionElement):
    """Milliseconds since 1970 of a naive UTC DATETIME column, in SQL."""

    type = sa.BigInteger()
    inherit_cache = True


@compiler.compiles(_EpochMs, 'sqlite')
def _sqlite_ms(element, sql, **kw):
    # julianday keeps milliseconds; the double's error is far below one.
    return ('CAST(ROUND((julianday(%s) - 2440587.5) * 86400000.0) '
            'AS INTEGER)' % sql.process(element.clauses, **kw))


@compiler.compiles(_EpochMs, 'mysql')
@compiler.compiles(_EpochMs, 'mariadb')
def _mysql_ms(element, sql, **kw):
    # Not UNIX_TIMESTAMP: it reads a DATETIME in the session's time zone.
    return ("(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', %s) "
            'DIV 1000)' % sql.process(element.clauses, **kw))


@compiler.compiles(_EpochMs, 'postgresql')
def _postgresql_ms(element, sql, **kw):
    # A timestamp without time zone: its nominal seconds since 1970.
    return ('CAST(FLOOR(EXTRACT(EPOCH FROM %s) * 1000) AS BIGINT)'
            % sql.process(element.clauses, **kw))


def _int(value):
    return sa.literal(value, sa.BigInteger)


def _held_ms(now_ms, start_ms=None, end_ms=None):
    """Milliseconds each record held its device within [start, end]
    (open records: up to now), never below 0."""
    low = _EpochMs(USAGE.bound_at)
    if start_ms is not None:
        low = sa.case((low < _int(start_ms), _int(start_ms)), else_=low)
    high = sa.func.coalesce(_EpochMs(USAGE.released_at), _int(now_ms))
    if end_ms is not None:
        high = sa.case((high > _int(end_ms), _int(end_ms)), else_=high)
    return sa.case((high > low, high - low), else_=_int(0))


# Writing, within the transactions of db/arqs.py.

def open_record(session, arq_uuid):
    """Within the transaction that made the ARQ Bound: its binding starts
    counting now."""
    row = session.execute(
        sa.select(models.ExtARQ.project_id, models.ExtARQ.instance_uuid,
                  models.ExtARQ.resource_class, models.Device.model,
                  models.Device.hostname, models.Device.uuid)
        .select_from(models.ExtARQ)
        .outerjoin(models.Deployable,
                   models.Deployable.id == models.ExtARQ.deployable_id)
        .outerjoin(models.Device,
                   models.Device.id == models.Deployable.device_id)
        .where(models.ExtARQ.uuid == arq_uuid)).one()
    session.add(USAGE(
        arq_uuid=arq_uuid, project_id=row.project_id,
        instance_uuid=row.instance_uuid, resource_class=row.resource_class,
        model=row.model, hostname=row.hostname, device_uuid=row.uuid,
        bound_at=utcnow(), released_at=None))


def close_records(session, arq_uuids):
    """Within the transaction that moves these ARQs out of Bound (or
    deletes them): their bindings stop counting now."""
    if not arq_uuids:
        return
    session.execute(
        sa.update(USAGE)
        .where(USAGE.arq_uuid.in_(list(arq_uuids)),
               USAGE.released_at.is_(None))
        .values(released_at=utcnow())
        .execution_options(synchronize_session=False))


# Reading.

def summarize(start=None, end=None, group_by=DEFAULT_GROUP_BY,
              project_id=None):
    """Device-seconds held within [start, end) (naive UTC; start: the
    first of this month, 00:00; end: now), grouped by ``group_by`` (names
    of common/usage.py), in one query. A binding across an edge counts its
    part inside; one still held counts up to now."""
    now = utcnow()
    start = start or datetime.datetime(now.year, now.month, 1)
    end = end or now
    if start >= end:
        raise exception.Invalid(
            'The start of the period (%s) must be before its end (%s).'
            % (api.isotime(start), api.isotime(end)))
    columns = [COLUMNS[name] for name in group_by]
    held = _held_ms(to_ms(now), to_ms(start), to_ms(end))
    query = (sa.select(*columns, sa.func.sum(held), sa.func.count())
             .where(USAGE.bound_at < end,
                    sa.or_(USAGE.released_at.is_(None),
                           USAGE.released_at > start))
             .group_by(*columns).order_by(*columns))
    if project_id is not None:
        query = query.where(USAGE.project_id == project_id)
    with api.reader() as session:
        rows = session.execute(query).all()
    keys = [usage_dimensions.DIMENSIONS[name] for name in group_by]
    return {
        'start': api.isotime(start), 'end': api.isotime(end),
        'group_by': list(group_by),
        'usage': [dict(zip(keys, row[:-2]),
                       device_seconds=int(row[-2] or 0) / 1000.0,
                       bindings=row[-1]) for row in rows]}


def counter_totals():
    """{(project, resource class, model): device-seconds since records
    began}: the records still kept (held ones up to now) plus what
    pruning carried; two queries."""
    held = _held_ms(to_ms(utcnow()))
    columns = [USAGE.project_id, USAGE.resource_class, USAGE.model]
    totals = {}
    with api.reader() as session:
        kept = session.execute(
            sa.select(*columns, sa.func.sum(held))
            .group_by(*columns)).all()
        carried = session.execute(sa.select(
            CARRIED.project_id, CARRIED.resource_class, CARRIED.model,
            CARRIED.device_ms)).all()
    for *key, ms in list(kept) + list(carried):
        key = tuple(k or '' for k in key)
        totals[key] = totals.get(key, 0) + int(ms or 0)
    return {key: ms / 1000.0 for key, ms in totals.items()}


def prune(retention_days):
    """Forget the records closed more than ``retention_days`` ago,
    carrying what they counted into usage_carried. The records are
    locked first: a second conductor pruning meanwhile finds none."""
    cutoff = utcnow() - datetime.timedelta(days=retention_days)
    with api.writer() as session:
        old = session.execute(
            sa.select(USAGE.id, USAGE.project_id, USAGE.resource_class,
                      USAGE.model, USAGE.bound_at, USAGE.released_at)
            .where(USAGE.released_at < cutoff)
            .with_for_update()).all()
        if not old:
            return 0
        sums = {}
        for row in old:
            key = (row.project_id or '', row.resource_class or '',
                   row.model or '')
            sums[key] = sums.get(key, 0) + max(
                0, to_ms(row.released_at) - to_ms(row.bound_at))
        _carry(session, sums)
        session.execute(
            sa.delete(USAGE).where(USAGE.id.in_([r.id for r in old]))
            .execution_options(synchronize_session=False))
        return len(old)


def _carry(session, sums):
    found = {(c.project_id, c.resource_class, c.model): c
             for c in session.scalars(sa.select(CARRIED).where(
                 CARRIED.project_id.in_({k[0] for k in sums}))
                 .with_for_update())}
    for key, ms in sums.items():
        if key in found:
            found[key].device_ms += ms
        else:
            session.add(CARRIED(project_id=key[0], resource_class=key[1],
                                model=key[2], device_ms=ms))
