"""One background thread that can be woken and stopped at once.

Every background loop of the service (the agent's urgent heartbeats, the
conductor's heartbeat writer and read model announcements, the API's
read model, the NVIDIA GPU event listener) sleeps between rounds, is
woken early when there is work, and must end promptly when its service
stops: a sleep that a stop cannot cut short would hold the stop for a
whole interval. This is that loop's thread, its wake-up and its stop, so
each loop says only what one round does.
"""

import threading


class Worker:
    """Runs ``target()`` on a daemon thread named ``name``.

    The loop sleeps with ``pause`` (cut short by ``stop``) or ``wait``
    (cut short by ``wake`` or ``stop``) and ends when ``stopping``.
    ``join_timeout``: how long ``stop`` waits for the thread (None: until
    it ends)."""

    def __init__(self, name, target, join_timeout=None):
        self.name = name
        self._target = target
        self._join_timeout = join_timeout
        self._woken = threading.Event()
        self._stopping = threading.Event()
        self._thread = None

    @property
    def stopping(self):
        return self._stopping.is_set()

    @property
    def alive(self):
        return self._thread is not None and self._thread.is_alive()

    @property
    def started(self):
        return self._thread is not None

    def start(self):
        self._stopping.clear()
        self._thread = threading.Thread(target=self._target, name=self.name,
                                        daemon=True)
        self._thread.start()

    def wake(self):
        """Ends the loop's ``wait`` now, or its next one at once."""
        self._woken.set()

    def woken(self):
        """Whether a wake is pending (not yet cleared)."""
        return self._woken.is_set()

    def clear(self):
        """Forget pending wakes: one from now on ends the next ``wait``."""
        self._woken.clear()

    def wait(self, timeout=None):
        """Until woken or stopped (not cleared), or ``timeout`` seconds
        passed; whether woken or stopped."""
        return self._woken.wait(timeout)

    def pause(self, seconds):
        """Sleep ``seconds`` unless stopped first; whether stopped."""
        return self._stopping.wait(seconds)

    def stop(self):
        """Ask the loop to end, cut its sleep short, wait for its thread."""
        self._stopping.set()
        self._woken.set()
        if self._thread is not None:
            self._thread.join(self._join_timeout)
            self._thread = None
