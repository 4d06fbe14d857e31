"""Periodic tasks in one background thread (futurist, as Ironic does)."""

import threading

from futurist import periodics
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def _every(spacing, func):
    """A futurist periodic task calling ``func``; errors are logged only."""

    @periodics.periodic(spacing, run_immediately=True)
    def task():
        try:
            func()
        except Exception:
            LOG.exception('Periodic task %s failed; retrying in %ss',
                          func.__name__, spacing)

    return task, (), {}


class Periodic:
    """Runs each ``(spacing, func)`` of ``tasks`` every ``spacing`` seconds,
    starting at once."""

    def __init__(self, name, tasks):
        self.name = name
        self._worker = periodics.PeriodicWorker(
            [_every(spacing, func) for spacing, func in tasks])
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._worker.start,
                                        name=self.name, daemon=True)
        self._thread.start()

    def ran_each_once(self):
        """Whether every task has ended a run since ``start`` (each runs
        at once on start)."""
        return all(w.runs for w in self._worker.iter_watchers())

    def stop(self):
        """Wait for a running task to end; may be called more than once,
        and before ``start`` (the worker's wait would block for good)."""
        self._worker.stop()
        if self._thread is not None:
            self._worker.wait()
            self._thread.join()
            self._thread = None
