"""The conductor's worker threads, with a bound on the work they accept.

Bindings and operations are accepted by an RPC call and finished here.
Without a bound, a burst of binds waits in an unbounded queue until the
sweep fails it as interrupted; with one, the caller is told at once (503
with Retry-After) and nothing is written.
"""

import collections
import concurrent.futures
import contextlib
import threading

from oslo_log import log as logging

from cyborg_like.common import exception

LOG = logging.getLogger(__name__)


class WorkQueue:
    def __init__(self, workers, capacity):
        # The standard library's pool: its shutdown wakes idle workers at
        # once (futurist's look for a stop once a second, which a
        # conductor's stop waited for).
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='conductor-worker')
        self._slots = threading.Semaphore(capacity)
        # What the queued and running jobs carry (operations, binding
        # attempts), so that work accepted but carried by no job is found
        # (conductor/lost_work.py).
        self._carried = collections.Counter()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def reserve(self, count):
        """Room for ``count`` jobs, or Overloaded; yields ``submit``.

        Reserve before writing anything, so a refusal changes nothing;
        slots not used for a job are given back at the end of the block.
        """
        reservation = _Reservation(self)
        try:
            for _ in range(count):
                if not self._slots.acquire(blocking=False):
                    raise exception.Overloaded()
                reservation.slots += 1
            yield reservation.submit
        finally:
            for _ in range(reservation.slots - reservation.used):
                self._slots.release()

    def carried(self):
        """What the jobs queued or running now carry."""
        with self._lock:
            return frozenset(self._carried)

    def _carry(self, key, change):
        with self._lock:
            self._carried[key] += change
            if self._carried[key] <= 0:
                del self._carried[key]

    def _run(self, fn, args, carries):
        try:
            fn(*args)
        except Exception:
            # A future's exception is kept for a caller that never asks:
            # said here, or a job lost to a database or broker error
            # would leave no trace.
            LOG.exception('A conductor job (%s) failed', getattr(
                fn, '__qualname__', fn))
        finally:
            if carries is not None:
                self._carry(carries, -1)
            self._slots.release()

    def shutdown(self, wait=True):
        self._executor.shutdown(wait=wait)


class _Reservation:
    def __init__(self, queue):
        self._queue, self.slots, self.used = queue, 0, 0

    def submit(self, fn, *args, carries=None):
        """Run ``fn(*args)`` on a worker; ``carries``: what the job
        carries to its end (an operation's uuid, a binding's attempt)."""
        assert self.used < self.slots, 'more jobs than reserved'
        self.used += 1
        if carries is not None:
            self._queue._carry(carries, 1)
        return self._queue._executor.submit(self._queue._run, fn, args,
                                            carries)
