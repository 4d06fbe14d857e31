"""Prometheus process series of a conductor (docs/metrics.md): what this
process did (heartbeats ingested, flush time and lag, bind latency,
operations finished, rollout steps). Every conductor exports its own and
they sum correctly across conductors.

The fleet series (the state of the whole database, exported by one
conductor) are conductor/fleet_metrics.py; the HTTP server that serves
both on [metrics] conductor_listen_port is conductor/metrics_server.py.
"""

import time

import prometheus_client

from cyborg_like.db import metrics as db_metrics

PREFIX = 'cyborg_like_'
# Process series live here; each conductor service serves them with its
# own fleet collector (several services may share a process in tests).
PROCESS = prometheus_client.CollectorRegistry(auto_describe=True)

_LATENCY_BUCKETS = (.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30,
                    60, 120)

HEARTBEATS = prometheus_client.Counter(
    PREFIX + 'heartbeats_ingested', 'Agent heartbeats written to the '
    'database by this conductor.', registry=PROCESS)
READINGS = prometheus_client.Counter(
    PREFIX + 'heartbeat_readings_ingested', 'Device readings (health and '
    'utilization) written to the database by this conductor.',
    registry=PROCESS)
EXPIRED = prometheus_client.Counter(
    PREFIX + 'heartbeats_expired', 'Heartbeats this conductor took off the '
    'heartbeat stream past their deadline and dropped unread (a backlog: '
    'the conductors were away, or slower than the fleet beats).',
    registry=PROCESS)
FLUSH = prometheus_client.Histogram(
    PREFIX + 'heartbeat_flush_duration_seconds', 'Time to write one batch '
    'of heartbeats.', buckets=_LATENCY_BUCKETS, registry=PROCESS)
LAG = prometheus_client.Histogram(
    PREFIX + 'heartbeat_lag_seconds', 'From a heartbeat reaching this '
    'conductor to its readings being written.', buckets=_LATENCY_BUCKETS,
    registry=PROCESS)
BIND = prometheus_client.Histogram(
    PREFIX + 'bind_duration_seconds', 'From a binding being accepted '
    '(BindStarted) to its end (Bound or BindFailed).', ['outcome'],
    buckets=_LATENCY_BUCKETS, registry=PROCESS)
OPERATIONS_FINISHED = prometheus_client.Counter(
    PREFIX + 'operations_finished', 'Operations this conductor finished, '
    'by type and outcome (succeeded, failed, cancelled).', ['type', 'outcome'],
    registry=PROCESS)
# Together with the conductors' queue and the API's calls in flight: 0 of
# each, and nothing sent before can still be carried out (docs/metrics.md).
RPC_IN_PROGRESS = prometheus_client.Gauge(
    PREFIX + 'rpc_calls_in_progress', 'Calls from the API and the agents '
    'this conductor is carrying out now, by method.', ['method'],
    registry=PROCESS)
RPC_DROPPED_LATE = prometheus_client.Counter(
    PREFIX + 'rpc_calls_dropped_late', 'Calls this conductor dropped '
    'unread because their caller had stopped waiting (answered 503: the '
    'broker or the database was away), by method.', ['method'],
    registry=PROCESS)
SNAPSHOT = prometheus_client.Histogram(
    PREFIX + 'fleet_snapshot_duration_seconds', 'Time to take the fleet '
    'snapshot (the exporting conductor only).', buckets=_LATENCY_BUCKETS,
    registry=PROCESS)


# -- the tiny calls the conductor makes -------------------------------------

def heartbeats_written(beats, started):
    """A flush of ``beats`` (dicts with 'received_at' and 'health')
    begun at time.monotonic() ``started`` succeeded."""
    FLUSH.observe(time.monotonic() - started)
    now = db_metrics.utcnow()
    HEARTBEATS.inc(len(beats))
    READINGS.inc(sum(len(b.get('health') or ()) for b in beats))
    for beat in beats:
        LAG.observe(max(0.0, (now - beat['received_at']).total_seconds()))


def heartbeats_expired(count):
    """``count`` streamed beats were dropped past their deadline."""
    EXPIRED.inc(count)


def bind_ended(accepted, succeeded):
    """A binding accepted at time.monotonic() ``accepted`` ended."""
    BIND.labels('bound' if succeeded else 'failed').observe(
        time.monotonic() - accepted)


class RpcCalls:
    """The calls this conductor serves, as common/rpc.py's DropsLateCalls
    tells them."""

    @staticmethod
    def serving(method):
        return RPC_IN_PROGRESS.labels(method).track_inprogress()

    @staticmethod
    def dropped(method):
        RPC_DROPPED_LATE.labels(method).inc()


def operation_finished(op_type, outcome):
    """This conductor ended an operation of ``op_type`` in state
    ``outcome`` (succeeded, failed, cancelled)."""
    OPERATIONS_FINISHED.labels(op_type or 'unknown', outcome).inc()


# Fleet rollouts (conductor/rollouts.py).
ROLLOUT_STATES = prometheus_client.Counter(
    PREFIX + 'rollout_state_changes', 'Rollouts entering each state on '
    'this conductor.', ['state'], registry=PROCESS)
ROLLOUT_TARGETS = prometheus_client.Counter(
    PREFIX + 'rollout_targets_started', 'Rollout targets (changes and '
    'rollbacks) this conductor started.', registry=PROCESS)
ROLLOUT_WAVES = prometheus_client.Counter(
    PREFIX + 'rollout_waves_started', 'Rollout waves this conductor '
    'began.', registry=PROCESS)
ROLLOUT_RUNS = prometheus_client.Counter(
    PREFIX + 'rollout_runs', 'Runs of the rollouts periodic this conductor '
    'completed.', registry=PROCESS)


LEASE_RUNS = prometheus_client.Counter(
    PREFIX + 'lease_runs', 'Runs of the leases periodic this conductor '
    'completed.', registry=PROCESS)


def rollout_state(state):
    ROLLOUT_STATES.labels(state).inc()


def rollout_target_started(rollout_uuid):
    ROLLOUT_TARGETS.inc()


def rollout_wave(rollout_uuid):
    ROLLOUT_WAVES.inc()


def rollout_run():
    """A run of the rollouts periodic ended: a flat line is a stalled
    periodic; a test waits for the next run instead of sleeping."""
    ROLLOUT_RUNS.inc()


def lease_run():
    """A run of the leases periodic ended (conductor/leases.py): flat, it
    is stuck; a test waits for runs instead of sleeping."""
    LEASE_RUNS.inc()
