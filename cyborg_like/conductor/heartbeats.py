"""Gathering agents' heartbeats and writing them in batches.

An agent's heartbeat answers at once; a thread writes what came in during
the last [conductor] heartbeat_flush_interval in one transaction (only the
latest beat of each host matters). Then the conductor asks agents whose
inventory it does not hold to send it, and announces devices whose health
or service changed (conductor/health_notices.py). An urgent beat (an
agent's driver saw a device's health change) is written before the
heartbeat answers, with whatever else was pending.
"""

import threading
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging

from cyborg_like.common import worker
from cyborg_like.conductor import drain_breaker
from cyborg_like.conductor import health_notices
from cyborg_like.conductor import metrics
from cyborg_like.db import heartbeats
from cyborg_like.db import hosts

LOG = logging.getLogger(__name__)


class HeartbeatCollector:
    def __init__(self, conf, agent_api, notifier):
        self.conf = conf
        self.agent_api = agent_api
        self.notices = health_notices.HealthNotices(notifier)
        self._pending = {}
        self._lock = threading.Lock()
        # One flush at a time: a flush returns only once what was pending
        # when it was called is written, even if the periodic flush had
        # already taken it (callers age or read hosts right after).
        self._flushing = threading.Lock()
        self._worker = worker.Worker('heartbeat-writer', self._run)

    def add(self, context, host, agent_version, inventory_hash, health,
            urgent=False):
        self.add_many(context, [{
            'host': host, 'agent_version': agent_version,
            'inventory_hash': inventory_hash, 'health': health}])
        if urgent:
            try:
                self.flush()
            except Exception:
                # _flush put it back: the periodic writer tries again.
                LOG.exception('Could not write the urgent heartbeat of %s '
                              'at once; it goes with the next batch', host)

    def add_many(self, context, beats):
        """Beats received now (one called, or a batch off the heartbeat
        stream): dicts with ``host``, ``agent_version``, ``inventory_hash``
        and ``health``; a later one of a host replaces an earlier one."""
        received_at = hosts.utcnow()
        with self._lock:
            for beat in beats:
                self._pending[beat['host']] = {
                    'host': beat['host'],
                    'agent_version': beat['agent_version'],
                    'inventory_hash': beat['inventory_hash'],
                    'health': beat['health'], 'received_at': received_at,
                    'context': context}

    def start(self):
        self._worker.start()

    def stop(self):
        self._worker.stop()
        self.flush()

    def _run(self):
        interval = self.conf.conductor.heartbeat_flush_interval
        wait = interval
        while not self._worker.pause(wait):
            started = time.monotonic()
            try:
                self.flush()
            except Exception:
                LOG.exception('Could not write heartbeats; will retry')
                # A whole interval before trying a failing database again.
                wait = interval
                continue
            # Flushes that succeed start an interval apart, not an interval
            # after the last one ended: a flush that takes most of the
            # interval (a big fleet) does not double the readings' lag.
            wait = max(0.0, interval - (time.monotonic() - started))

    def flush(self):
        with self._flushing:
            self._flush()

    def _flush(self):
        with self._lock:
            beats, self._pending = self._pending, {}
        if not beats:
            return
        started = time.monotonic()
        try:
            stored, changed, moves = self._ingest(list(beats.values()))
        except Exception:
            self._requeue(beats)
            raise
        metrics.heartbeats_written(beats.values(), started)
        for beat in beats.values():
            if stored.get(beat['host']) != beat['inventory_hash']:
                # We hold another inventory than the agent does (a new
                # host, a lost report, a restored database): ask again.
                LOG.info('Inventory of host %s is out of date, asking for '
                         'it', beat['host'])
                self.agent_api.resync_inventory(beat['context'],
                                                beat['host'])
        self.notices.announce(
            {host: beat['context'] for host, beat in beats.items()},
            changed, moves)

    def _ingest(self, beats):
        retention = self.conf.conductor.metrics_retention
        breaker = drain_breaker.DrainBreaker(self.conf.health)
        try:
            return heartbeats.ingest(beats, retention, breaker)
        except (db_exc.DBDuplicateEntry, db_exc.DBDeadlock):
            # Another conductor added one of these hosts meanwhile, or
            # moved one of their devices.
            return heartbeats.ingest(beats, retention, breaker)

    def _requeue(self, beats):
        with self._lock:
            for host, beat in beats.items():
                self._pending.setdefault(host, beat)
