"""The fleet series of the conductors (docs/metrics.md): devices, hosts,
resource classes, operations by state -- the state of the whole database,
exported by ONE conductor only, the alive one first by (created_at, id)
in the conductors table (db/metrics.py ``exporter``), so that nothing is
counted twice. They come from a snapshot of a constant number of bulk
queries, kept for [metrics] fleet_cache_seconds.
"""

import threading
import time

from oslo_log import log as logging
import prometheus_client
from prometheus_client import core

from cyborg_like.common import states
from cyborg_like.conductor import dcgm_metrics
from cyborg_like.conductor import metrics
from cyborg_like.conductor import usage_metrics
from cyborg_like.db import drain_reasons
from cyborg_like.db import metrics as db_metrics

LOG = logging.getLogger(__name__)

PREFIX = metrics.PREFIX


DEVICE_LABELS = ['device_uuid', 'hostname', 'type', 'model']
# (series, help, utilization key, scale)
DEVICE_READINGS = (
    ('device_utilization_ratio', 'Compute utilization (0-1).',
     'gpu_percent', 0.01),
    ('device_memory_utilization_ratio', 'Memory bandwidth utilization '
     '(0-1).', 'memory_percent', 0.01),
    ('device_memory_used_bytes', 'Device memory used.', 'memory_used_bytes',
     1),
    ('device_memory_total_bytes', 'Device memory in all.',
     'memory_total_bytes', 1),
    ('device_temperature_celsius', 'Device temperature.', 'temperature_c',
     1),
    ('device_power_watts', 'Device power draw.', 'power_w', 1),
)
HEALTH_STATES = ('healthy', 'unhealthy', 'unknown')
SERVICE_STATES = states.DEVICE_SERVICE.states
DRAIN_CAUSES = drain_reasons.CAUSES


def fleet_families(snap, now, host_down_after):
    """The fleet series of snapshot ``snap`` (db/metrics.py) at ``now``
    (a naive UTC datetime), as a list of metric families."""
    families = []
    families += _device_families(snap['devices'], snap['holders'])
    families += dcgm_metrics.families(snap['devices'], snap['holders'])
    families += _host_families(snap['hosts'], now, host_down_after)
    families += _resource_class_families(snap['resource_classes'])
    families += _breaker_families(snap['breaker'])
    ops = core.GaugeMetricFamily(
        PREFIX + 'operations', 'Operations in the database by type and '
        'state.', labels=['type', 'state'])
    for (op_type, state), count in sorted(snap['operations'].items()):
        ops.add_metric([op_type, state], count)
    families.append(ops)
    return families


def _device_families(devices, holders):
    info = core.GaugeMetricFamily(
        PREFIX + 'device_info', 'A device known to cyborg_like (always 1).',
        labels=DEVICE_LABELS + ['vendor', 'pci_address', 'status'])
    health = core.GaugeMetricFamily(
        PREFIX + 'device_health', 'The health state of a device: 1 for the '
        'state it is in, 0 for the others.',
        labels=DEVICE_LABELS + ['state'])
    bound = core.GaugeMetricFamily(
        PREFIX + 'device_bound', '1 when an accelerator request is bound to '
        'the device.', labels=DEVICE_LABELS)
    drained = core.GaugeMetricFamily(
        PREFIX + 'device_drained', '1 while the device is drained (not '
        'bindable, reserved in Placement), for any cause.',
        labels=DEVICE_LABELS)
    causes = core.GaugeMetricFamily(
        PREFIX + 'device_drain_cause', 'What drains the device: 1 for '
        'each cause that does (driver_operation, firmware, mig_layout, '
        'health), 0 for the others.', labels=DEVICE_LABELS + ['cause'])
    service = core.GaugeMetricFamily(
        PREFIX + 'device_service', 'Where its health readings left the '
        'device: 1 for its state (serving, drained, flagged), 0 for the '
        'others (docs/health.md).', labels=DEVICE_LABELS + ['state'])
    holder = core.GaugeMetricFamily(
        PREFIX + 'device_holder', 'A project and instance holding the '
        'device through a bound accelerator request (always 1).',
        labels=DEVICE_LABELS + ['project_id', 'instance_uuid'])
    readings = [core.GaugeMetricFamily(PREFIX + name, text,
                                       labels=DEVICE_LABELS)
                for name, text, _k, _s in DEVICE_READINGS]
    for device in devices:
        labels = [device['uuid'], device['hostname'], device['type'],
                  device['model']]
        info.add_metric(labels + [device['vendor'], device['pci_address'],
                                  device['status']], 1)
        for state in HEALTH_STATES:
            health.add_metric(labels + [state],
                              1 if device['health'] == state else 0)
        for state in SERVICE_STATES:
            service.add_metric(labels + [state],
                               1 if device['service_state'] == state else 0)
        held = holders.get(device['id'], ())
        bound.add_metric(labels, 1 if held else 0)
        drained.add_metric(labels, 1 if device['drained'] else 0)
        for cause in DRAIN_CAUSES:
            causes.add_metric(labels + [cause], 1 if cause in
                              device['drain_causes'] else 0)
        for project, instance in held:
            holder.add_metric(labels + [project, instance], 1)
        utilization = device['utilization']
        for family, (_n, _t, key, scale) in zip(readings, DEVICE_READINGS):
            value = _number(utilization.get(key))
            if value is not None:
                family.add_metric(labels, value * scale)
    return [info, health, service, bound, drained, causes,
            holder] + readings


def _host_families(hosts, now, down_after):
    up = core.GaugeMetricFamily(
        PREFIX + 'host_up', '1 while the host\'s agent heartbeats.',
        labels=['hostname'])
    age = core.GaugeMetricFamily(
        PREFIX + 'host_heartbeat_age_seconds', 'Seconds since the host\'s '
        'last heartbeat.', labels=['hostname'])
    info = core.GaugeMetricFamily(
        PREFIX + 'host_info', 'The agent of a host (always 1).',
        labels=['hostname', 'agent_version'])
    drivers = core.GaugeMetricFamily(
        PREFIX + 'host_driver_info', 'A driver family installed on a host '
        'and its version, as the last driver operation left it (always '
        '1).', labels=['hostname', 'driver', 'version'])
    for host in hosts:
        name, last = host['hostname'], host['last_heartbeat']
        seconds = None if last is None else max(
            0.0, (now - last).total_seconds())
        up.add_metric([name], 1 if seconds is not None
                      and seconds <= down_after else 0)
        if seconds is not None:
            age.add_metric([name], seconds)
        info.add_metric([name, host['agent_version']], 1)
        for driver, version in sorted(host['driver_versions'].items()):
            drivers.add_metric([name, driver, str(version or '')], 1)
    return [up, age, info, drivers]


def _resource_class_families(classes):
    names = (('capacity', 'Accelerators of the class in all.'),
             ('reserved', 'Accelerators of the class not offered (device '
              'disabled, unhealthy or drained).'),
             ('used', 'Accelerators of the class in use by instances.'),
             ('free', 'Accelerators of the class offered and not in use.'))
    families = {key: core.GaugeMetricFamily(
        PREFIX + 'resource_class_' + key, text, labels=['resource_class'])
        for key, text in names}
    for rc, counts in sorted(classes.items()):
        values = dict(counts, capacity=counts['total'], free=max(
            0, counts['total'] - counts['reserved'] - counts['used']))
        for key, _text in names:
            families[key].add_metric([rc], values[key])
    return list(families.values())


def _breaker_families(breaker):
    """The drain circuit breaker (conductor/drain_breaker.py): open
    fleet-wide or for a host, and the automatic drains counted in its
    window."""
    is_open = core.GaugeMetricFamily(
        PREFIX + 'health_drain_breaker_open', '1 while the drain circuit '
        'breaker is open (unhealthy devices only flagged), for the fleet '
        '(scope="fleet", hostname="") or one host.',
        labels=['scope', 'hostname'])
    drains = core.GaugeMetricFamily(
        PREFIX + 'health_drains_in_window', 'Automatic drains within '
        '[health] breaker_window, for the fleet or one host.',
        labels=['scope', 'hostname'])
    is_open.add_metric(['fleet', ''], 1 if breaker['open'] else 0)
    drains.add_metric(['fleet', ''], breaker['drains'])
    for host, counted in breaker['hosts'].items():
        is_open.add_metric(['host', host], 1 if counted['open'] else 0)
        drains.add_metric(['host', host], counted['drains'])
    return [is_open, drains]


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


class FleetCollector:
    """Yields the fleet series when this conductor is the exporter; the
    decision and the snapshot are both kept for ``cache_seconds``."""

    def __init__(self, conductor_uuid, cache_seconds, service_down_after,
                 host_down_after, breaker, clock=time.monotonic):
        self.conductor_uuid = conductor_uuid
        self.breaker = breaker
        self.cache_seconds = cache_seconds
        self.service_down_after = service_down_after
        self.host_down_after = host_down_after
        self._clock = clock
        self._lock = threading.Lock()
        self._taken_at = None
        self._families = []
        self._text = None

    def describe(self):
        return []   # not known before the first snapshot

    def collect(self):
        """The fleet series, after ``cyborg_like_fleet_exporter`` (a
        process series: 1 on the exporting conductor, 0 elsewhere)."""
        with self._lock:
            self._refresh()
            return list(self._families)

    def text(self):
        """The same, in Prometheus's text format: rendered once per
        snapshot (rendering 10,000 devices' series costs about a second
        of CPU; a scrape within [metrics] fleet_cache_seconds costs none).
        """
        with self._lock:
            self._refresh()
            if self._text is None:
                self._text = prometheus_client.generate_latest(
                    _Families(self._families))
            return self._text

    def _refresh(self):
        now = self._clock()
        if self._taken_at is None or \
                now - self._taken_at >= self.cache_seconds:
            self._families = self._take()
            self._text = None
            self._taken_at = self._clock()

    def _take(self):
        exporting = core.GaugeMetricFamily(
            PREFIX + 'fleet_exporter', '1 when this conductor exports the '
            'fleet series, 0 when another one does.')
        try:
            leader = db_metrics.exporter(self.service_down_after)
        except Exception as error:
            LOG.warning('Could not tell which conductor exports the fleet '
                        'metrics: %s', error)
            return []
        exporting.add_metric([], 1 if leader == self.conductor_uuid else 0)
        if leader != self.conductor_uuid:
            return [exporting]
        started = time.monotonic()
        try:
            snap = db_metrics.snapshot(self.breaker)
        except Exception as error:
            LOG.warning('Could not take the fleet snapshot: %s', error)
            return []
        families = fleet_families(snap, db_metrics.utcnow(),
                                  self.host_down_after)
        families += usage_metrics.families()
        metrics.SNAPSHOT.observe(time.monotonic() - started)
        return [exporting] + families


class _Families:
    """Metric families already built, as a collector."""

    def __init__(self, families):
        self._families = families

    def collect(self):
        return self._families
