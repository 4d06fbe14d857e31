"""The fleet metrics: snapshot -> series, the exporting conductor, and a
snapshot's cost not growing with the number of devices."""

import datetime
import json
import types

import pytest
import sqlalchemy as sa

from cyborg_like.conductor import drain_breaker
from cyborg_like.conductor import fleet_metrics
from cyborg_like.conductor import metrics
from cyborg_like.db import api as db_api
from cyborg_like.db import metrics as db_metrics
from cyborg_like.db import models

NOW = datetime.datetime(2025, 1, 1, 12, 0, 0)
# [health] as configured by default.
HEALTH = types.SimpleNamespace(auto_drain=True, recovery_checks=3,
                               breaker_window=3600, max_drains_per_host=4,
                               max_drains=50)
BREAKER = drain_breaker.DrainBreaker(HEALTH)
GPU_UTIL = {'gpu_percent': 37, 'memory_percent': 12,
            'memory_used_bytes': 2 * 1048576 * 1024,
            'memory_total_bytes': 16 * 1048576 * 1024,
            'temperature_c': 61, 'power_w': 70.5}


def _snapshot():
    device = {'type': 'GPU', 'vendor': '0x10de', 'status': 'enabled',
              'drained': False, 'drain_causes': [],
              'service_state': 'serving'}
    return {
        'devices': [
            dict(device, id=1, uuid='u-a100', hostname='h1', model='A100',
                 health='healthy', utilization=GPU_UTIL,
                 pci_address='0000:af:00.0'),
            dict(device, id=2, uuid='u-t4', hostname='h1', model='T4',
                 health='unhealthy', utilization={}, drained=True,
                 drain_causes=['driver_operation', 'health'],
                 service_state='drained', pci_address='0000:d8:00.0'),
            dict(device, id=3, uuid='u-fpga', hostname='h2', type='FPGA',
                 vendor='0x8086', model='N3000', health='unknown',
                 utilization={'temperature_c': 44.5},
                 pci_address='0000:5e:00.0')],
        'holders': {1: [('p1', 'i1')]},
        'hosts': [
            {'hostname': 'h1', 'last_heartbeat': NOW -
             datetime.timedelta(seconds=4), 'agent_version': '1.0',
             'driver_versions': {'nvidia': '550.54'}},
            {'hostname': 'h2', 'last_heartbeat': NOW -
             datetime.timedelta(seconds=300), 'agent_version': '1.0',
             'driver_versions': {}},
            {'hostname': 'h3', 'last_heartbeat': None, 'agent_version': '',
             'driver_versions': {}}],
        'resource_classes': {'PGPU': {'total': 2, 'reserved': 1,
                                      'used': 1},
                             'FPGA': {'total': 2, 'reserved': 0,
                                      'used': 0}},
        'operations': {('program', 'failed'): 2,
                       ('firmware', 'succeeded'): 1},
        'breaker': {'window': 3600, 'drains': 1, 'max_drains': 50,
                    'open': False, 'max_drains_per_host': 1,
                    'hosts': {'h1': {'drains': 1, 'open': True}}}}


def _series(families):
    """{(name, frozenset(labels)): value}."""
    out = {}
    for family in families:
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = \
                sample.value
    return out


def _value(series, name, **labels):
    matches = [v for (n, ls), v in series.items()
               if n == name and set(labels.items()) <= ls]
    assert len(matches) == 1, (name, labels, matches)
    return matches[0]


def test_snapshot_to_series():
    series = _series(fleet_metrics.fleet_families(_snapshot(), NOW, 30))
    p = metrics.PREFIX
    assert _value(series, p + 'device_utilization_ratio',
                  device_uuid='u-a100') == pytest.approx(0.37)
    assert _value(series, p + 'device_memory_used_bytes',
                  device_uuid='u-a100') == 2 * 1024 ** 3
    assert _value(series, p + 'device_temperature_celsius',
                  device_uuid='u-fpga') == 44.5
    assert _value(series, p + 'device_power_watts',
                  device_uuid='u-a100') == 70.5
    # A device without a reading has no reading series.
    assert not [k for k in series if k[0] == p + 'device_power_watts'
                and ('device_uuid', 'u-t4') in k[1]]
    for uuid, state in (('u-a100', 'healthy'), ('u-t4', 'unhealthy'),
                        ('u-fpga', 'unknown')):
        for other in fleet_metrics.HEALTH_STATES:
            assert _value(series, p + 'device_health', device_uuid=uuid,
                          state=other) == (1 if other == state else 0)
    assert _value(series, p + 'device_bound', device_uuid='u-a100') == 1
    assert _value(series, p + 'device_bound', device_uuid='u-t4') == 0
    assert _value(series, p + 'device_drained', device_uuid='u-t4') == 1
    for cause in ('driver_operation', 'firmware', 'mig_layout', 'health'):
        assert _value(series, p + 'device_drain_cause', device_uuid='u-t4',
                      cause=cause) == (cause in ('driver_operation',
                                                 'health'))
        assert _value(series, p + 'device_drain_cause',
                      device_uuid='u-a100', cause=cause) == 0
    assert _value(series, p + 'device_holder', device_uuid='u-a100',
                  project_id='p1', instance_uuid='i1') == 1

    assert _value(series, p + 'host_up', hostname='h1') == 1
    assert _value(series, p + 'host_up', hostname='h2') == 0
    assert _value(series, p + 'host_up', hostname='h3') == 0
    assert _value(series, p + 'host_heartbeat_age_seconds',
                  hostname='h2') == 300
    assert _value(series, p + 'host_driver_info', hostname='h1',
                  driver='nvidia', version='550.54') == 1

    assert [_value(series, p + 'resource_class_' + k,
                   resource_class='PGPU')
            for k in ('capacity', 'reserved', 'used', 'free')] == [2, 1, 1, 0]
    assert _value(series, p + 'resource_class_free',
                  resource_class='FPGA') == 2
    assert _value(series, p + 'operations', type='program',
                  state='failed') == 2

    assert _value(series, p + 'device_service', device_uuid='u-t4',
                  state='drained') == 1
    assert _value(series, p + 'device_service', device_uuid='u-a100',
                  state='drained') == 0
    assert _value(series, p + 'health_drain_breaker_open',
                  scope='fleet') == 0
    assert _value(series, p + 'health_drain_breaker_open', scope='host',
                  hostname='h1') == 1
    assert _value(series, p + 'health_drains_in_window', scope='fleet') == 1


def test_dcgm_names_and_labels():
    series = _series(fleet_metrics.fleet_families(_snapshot(), NOW, 30))
    labels = dict(gpu='0', UUID='u-a100', device='nvidia0',
                  modelName='A100', Hostname='h1',
                  pci_bus_id='00000000:AF:00.0', device_uuid='u-a100',
                  project_id='p1')
    assert _value(series, 'DCGM_FI_DEV_GPU_UTIL', **labels) == 37
    assert _value(series, 'DCGM_FI_DEV_FB_USED', **labels) == 2048
    assert _value(series, 'DCGM_FI_DEV_FB_FREE', **labels) == 14 * 1024
    assert _value(series, 'DCGM_FI_DEV_GPU_TEMP', **labels) == 61
    assert _value(series, 'DCGM_FI_DEV_POWER_USAGE', **labels) == 70.5
    # FPGAs are not GPUs; the second GPU of h1 is gpu 1 (no reading).
    assert not [k for k in series if k[0].startswith('DCGM')
                and ('UUID', 'u-fpga') in k[1]]


def _add_conductor(session, uuid, created, heartbeat):
    session.add(models.Conductor(uuid=uuid, hostname=uuid,
                                 created_at=created,
                                 last_heartbeat=heartbeat))


def test_the_oldest_alive_conductor_exports(migrated_db):
    now = db_metrics.utcnow()
    minute = datetime.timedelta(minutes=1)
    with db_api.writer() as session:
        _add_conductor(session, 'dead-oldest', now - 10 * minute,
                       now - 5 * minute)
        _add_conductor(session, 'alive-old', now - 5 * minute, now)
        _add_conductor(session, 'alive-new', now - minute, now)
    assert db_metrics.exporter(15) == 'alive-old'
    exporting = fleet_metrics.FleetCollector('alive-old', 0, 15, 30, BREAKER)
    other = fleet_metrics.FleetCollector('alive-new', 0, 15, 30, BREAKER)
    assert len(exporting.collect()) > 1
    assert [(f.name, f.samples[0].value) for f in other.collect()] == [
        ('cyborg_like_fleet_exporter', 0)]
    with db_api.writer() as session:
        session.execute(sa.delete(models.Conductor).where(
            models.Conductor.uuid == 'alive-old'))
    assert db_metrics.exporter(15) == 'alive-new'
    assert len(other.collect()) > 1


def test_fleet_cache_keeps_a_snapshot(migrated_db):
    clock = [0.0]
    now = db_metrics.utcnow()
    with db_api.writer() as session:
        _add_conductor(session, 'c1', now, now)
    collector = fleet_metrics.FleetCollector('c1', 15, 15, 30, BREAKER,
                                       clock=lambda: clock[0])
    with _statements() as seen:
        collector.collect()
        first = len(seen)
        clock[0] = 10
        collector.collect()
        assert len(seen) == first
        clock[0] = 16
        collector.collect()
        assert len(seen) == 2 * first
    # The text is rendered once per snapshot too.
    text = collector.text()
    assert b'cyborg_like_fleet_exporter 1.0' in text
    clock[0] = 20
    assert collector.text() is text
    clock[0] = 40
    assert collector.text() is not text


class _statements:
    def __enter__(self):
        self.seen = []
        self.engine = db_api.get_engine()
        sa.event.listen(self.engine, 'before_cursor_execute', self._record)
        return self.seen

    def _record(self, conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith('SELECT'):
            self.seen.append(statement)

    def __exit__(self, *exc):
        sa.event.remove(self.engine, 'before_cursor_execute', self._record)


def _fleet(first, last, profile_id=None):
    """GPUs ``first``..``last``-1 on a host per ten, each with a
    deployable, a handle, an rc attribute and an operation, and a bound
    ARQ on every other one. Returns the device profile's id."""
    now = db_metrics.utcnow()
    with db_api.writer() as session:
        if profile_id is None:
            profile = models.DeviceProfile(uuid='p', name='p',
                                           profile_json='[]')
            session.add(profile)
            session.flush()
            profile_id = profile.id
        for number in range(first // 10, last // 10):
            session.add(models.Host(hostname='h%d' % number,
                                    last_heartbeat=now,
                                    driver_versions='{"nvidia": "550"}'))
        for number in range(first, last):
            device = models.Device(
                uuid='d%d' % number, type='GPU', vendor='0x10de',
                model='A100', hostname='h%d' % (number // 10),
                health='healthy', utilization=json.dumps(GPU_UTIL))
            device.controlpath_ids = [models.ControlpathID(
                uuid='c%d' % number, cpid_type='PCI',
                cpid_info=json.dumps({'domain': '0000', 'bus': '%02x'
                                      % (number % 256), 'device': '00',
                                      'function': '0'}))]
            deployable = models.Deployable(uuid='dep%d' % number,
                                           name='gpu0', num_accelerators=1)
            deployable.attributes = [models.Attribute(
                uuid='a%d' % number, key='rc', value='PGPU')]
            handle = models.AttachHandle(
                uuid='ah%d' % number, attach_type='PCI',
                attach_info='x%d' % number, in_use=number % 2 == 0)
            deployable.attach_handles = [handle]
            device.deployables = [deployable]
            session.add(device)
            session.flush()
            if number % 2 == 0:
                session.add(models.ExtARQ(
                    uuid='arq%d' % number, state='Bound',
                    device_profile_id=profile_id, device_profile_group_id=0,
                    project_id='proj', instance_uuid='i%d' % number,
                    deployable_id=deployable.id,
                    attach_handle_id=handle.id))
            session.add(models.Operation(uuid='op%d' % number,
                                         type='program', target_uuid='x',
                                         state='succeeded'))
    return profile_id


def _counted_snapshot(count):
    with _statements() as seen:
        snap = db_metrics.snapshot(BREAKER)
    assert len(snap['devices']) == count
    assert len(snap['holders']) == count // 2
    assert snap['resource_classes'] == {'PGPU': {
        'total': count, 'reserved': 0, 'used': count // 2}}
    assert snap['operations'] == {('program', 'succeeded'): count}
    assert len(snap['hosts']) == count // 10
    return len(seen)


def test_snapshot_queries_do_not_grow_with_devices(migrated_db):
    profile_id = _fleet(0, 20)
    with_20 = _counted_snapshot(20)
    _fleet(20, 200, profile_id)
    with_200 = _counted_snapshot(200)
    assert with_20 == with_200 <= 8
    # The series of 200 devices come from that snapshot alone.
    with _statements() as seen:
        families = fleet_metrics.fleet_families(db_metrics.snapshot(BREAKER),
                                          db_metrics.utcnow(), 30)
    assert len(seen) == with_200
    util = [f for f in families if f.name == 'DCGM_FI_DEV_GPU_UTIL'][0]
    assert len(util.samples) == 200


def _device(session, uuid, **columns):
    device = models.Device(uuid=uuid, type='FPGA', vendor='0x8086',
                           model='N3000', hostname='h1', **columns)
    session.add(device)
    return device


def _operation(session, uuid, kind, target, state):
    session.add(models.Operation(uuid=uuid, type=kind, target_uuid=target,
                                 state=state))
    session.flush()


def test_every_drain_cause_is_counted(migrated_db):
    """A device drained by a flash or a MIG layout (status maintaining,
    its latest such operation not succeeded) is drained as one drained by
    a driver operation or its health; an operator's disable is not."""
    with db_api.writer() as session:
        _device(session, 'flashing', status='maintaining')
        _operation(session, 'f1', 'firmware', 'flashing', 'running')
        _device(session, 'failed-layout', status='maintaining')
        _operation(session, 'm1', 'mig_layout', 'failed-layout', 'failed')
        # Its latest flash succeeded: the operator disabled it.
        _device(session, 'disabled', status='maintaining')
        _operation(session, 'f2', 'firmware', 'disabled', 'failed')
        _operation(session, 'f3', 'firmware', 'disabled', 'succeeded')
        # A failed flash it was enabled after drains it no more.
        _device(session, 'enabled', status='enabled')
        _operation(session, 'f4', 'firmware', 'enabled', 'failed')
        _device(session, 'driver', drained_by='op-d', drain_reason='why')
        _device(session, 'sick', service_state='drained')
    devices = {d['uuid']: d for d in db_metrics.snapshot(BREAKER)['devices']}
    assert {uuid: (d['drained'], d['drain_causes'])
            for uuid, d in devices.items()} == {
        'flashing': (True, ['firmware']),
        'failed-layout': (True, ['mig_layout']),
        'disabled': (False, []),
        'enabled': (False, []),
        'driver': (True, ['driver_operation']),
        'sick': (True, ['health'])}
    series = _series(fleet_metrics.fleet_families(
        db_metrics.snapshot(BREAKER), NOW, 30))
    assert _value(series, metrics.PREFIX + 'device_drained',
                  device_uuid='flashing') == 1
    assert _value(series, metrics.PREFIX + 'device_drain_cause',
                  device_uuid='failed-layout', cause='mig_layout') == 1
