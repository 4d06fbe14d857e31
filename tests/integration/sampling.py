"""A background sampler for the length of a ``with`` block."""

import threading


class Sampling:
    """Calls ``sample()`` every ``interval`` seconds in a thread of its
    own while the ``with`` block runs; a ``sample()`` answering False
    ends the sampling early (it met an error to report)."""

    interval = 0.02

    def __init__(self):
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        raise NotImplementedError

    def _run(self):
        while not self._done.wait(self.interval):
            if self.sample() is False:
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
