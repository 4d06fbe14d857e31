"""The fleet as Prometheus sees it: one snapshot in a constant number of
bulk queries, whatever the number of devices (conductor/fleet_metrics.py turns
it into series; docs/metrics.md).

Which conductor exports the fleet is decided here too: the alive one that
is first by (created_at, id) in the conductors table, so that with several
conductors exactly one exports these series and nothing is counted twice.
"""

import json

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import conductors
from cyborg_like.db import drain_reasons
from cyborg_like.db import health
from cyborg_like.db import hosts
from cyborg_like.db import models

RC_KEY = 'rc'
utcnow = hosts.utcnow


def exporter(down_after):
    """The uuid of the conductor exporting the fleet, or None."""
    cond = models.Conductor
    with api.reader() as session:
        return session.scalar(
            sa.select(cond.uuid)
            .where(cond.uuid.in_(conductors.alive(down_after)))
            .order_by(cond.created_at, cond.id).limit(1))


def snapshot(breaker):
    """The fleet now, as plain dictionaries (eight queries);
    ``breaker``: the conductor's drain circuit breaker, which says what
    the drains counted here mean (conductor/drain_breaker.py)."""
    with api.reader() as session:
        return {'devices': _devices(session),
                'holders': _holders(session),
                'hosts': _hosts(session),
                'resource_classes': _resource_classes(session),
                'operations': _operations(session),
                'breaker': breaker.status(*health.drain_counts(
                    breaker.window, session))}


def _devices(session):
    """Every device, with what drains it (db/drain_reasons.py: a query
    of its own)."""
    dev, cpid = models.Device, models.ControlpathID
    rows = session.execute(
        sa.select(dev.id, dev.uuid, dev.hostname, dev.type, dev.vendor,
                  dev.model, dev.status, dev.health, dev.utilization,
                  dev.drained_by, dev.drain_reason, dev.service_state,
                  dev.vendor_board_info,
                  sa.func.min(cpid.cpid_info).label('cpid'))
        .outerjoin(cpid, cpid.device_id == dev.id)
        .group_by(dev.id, dev.uuid, dev.hostname, dev.type, dev.vendor,
                  dev.model, dev.status, dev.health, dev.utilization,
                  dev.drained_by, dev.drain_reason, dev.service_state,
                  dev.vendor_board_info)
        .order_by(dev.hostname, dev.id)).all()
    why = drain_reasons.of_devices(session, rows, fleet=True)
    return [{'id': r.id, 'uuid': r.uuid, 'hostname': r.hostname,
             'type': r.type, 'vendor': r.vendor, 'model': r.model,
             'status': r.status, 'health': r.health,
             'utilization': _json(r.utilization, {}),
             'drained': bool(why[r.uuid]),
             'drain_causes': [w['cause'] for w in why[r.uuid]],
             'service_state': r.service_state,
             # The GPU's NVML uuid, index and minor (dcgm-exporter's labels)
             'vendor_board_info': _json(r.vendor_board_info, {}),
             'pci_address': _address(r.cpid)} for r in rows]


def _holders(session):
    """{device id: [(project, instance)]} of the bound ARQs."""
    arq, dep = models.ExtARQ, models.Deployable
    rows = session.execute(
        sa.select(dep.device_id, arq.project_id, arq.instance_uuid)
        .join(dep, dep.id == arq.deployable_id)
        .where(arq.state == states.BOUND)).all()
    holders = {}
    for row in rows:
        holders.setdefault(row.device_id, []).append(
            (row.project_id or '', row.instance_uuid or ''))
    return holders


def _hosts(session):
    host = models.Host
    rows = session.execute(
        sa.select(host.hostname, host.last_heartbeat, host.agent_version,
                  host.driver_versions).order_by(host.hostname)).all()
    return [{'hostname': r.hostname, 'last_heartbeat': r.last_heartbeat,
             'agent_version': r.agent_version or '',
             'driver_versions': _json(r.driver_versions, {})} for r in rows]


def _resource_classes(session):
    """{rc: {'total', 'reserved', 'used'}} as Placement is told them
    (conductor/placement/desired.py): a deployable of a disabled or
    drained device is reserved whole."""
    dep, attr, dev = models.Deployable, models.Attribute, models.Device
    handle = models.AttachHandle
    usable = sa.and_(dev.status == 'enabled',
                     dev.service_state != states.DRAINED,
                     dev.drained_by.is_(None))
    totals = session.execute(
        sa.select(attr.value,
                  sa.func.sum(dep.num_accelerators),
                  sa.func.sum(sa.case((usable, 0),
                                      else_=dep.num_accelerators)))
        .join(dep, dep.id == attr.deployable_id)
        .join(dev, dev.id == dep.device_id)
        .where(attr.key == RC_KEY, dep.num_accelerators > 0)
        .group_by(attr.value)).all()
    used = dict(session.execute(
        sa.select(attr.value, sa.func.count(handle.id))
        .join(dep, dep.id == attr.deployable_id)
        .join(handle, handle.deployable_id == dep.id)
        .where(attr.key == RC_KEY, handle.in_use.is_(True))
        .group_by(attr.value)).all())
    return {rc: {'total': int(total or 0), 'reserved': int(reserved or 0),
                 'used': int(used.get(rc, 0))}
            for rc, total, reserved in totals}


def _operations(session):
    """{(type, state): count}."""
    op = models.Operation
    return {(t, s): n for t, s, n in session.execute(
        sa.select(op.type, op.state, sa.func.count(op.id))
        .group_by(op.type, op.state)).all()}


def _json(text, default):
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def _address(cpid_info):
    value = _json(cpid_info, cpid_info)
    if isinstance(value, dict):
        return '%s:%s:%s.%s' % (value.get('domain', ''),
                                value.get('bus', ''), value.get('device', ''),
                                value.get('function', ''))
    return str(value or '')
