"""Whether this conductor may judge others' liveness yet.

A conductor fails the work of conductors and hosts it has not heard from
for a while (``_fail_interrupted_work``). Their silence is only evidence
if this conductor could have heard them: while the database was away
nobody could write a heartbeat, so right after it comes back every
conductor and host looks down, this one included, and a sweep would fail
bindings that are going on well (seen after a 30 s database cut: a bind
failed as "interrupted (its conductor stopped)" by its own conductor).

So the sweep waits until this conductor's own heartbeats have been
written without a gap for ``grace`` seconds (the longest of
``service_down_after`` and ``host_down_after``: every live conductor and
host has beaten since). A process that starts beating judges at once: a
gap needs a beat before it.
"""

import time


class OwnBeats:
    def __init__(self, down_after, grace, clock=time.monotonic):
        self._down_after = down_after
        self.grace = grace
        self._clock = clock
        self._last = None
        self._steady_since = float('-inf')

    def beat(self, write):
        """Run ``write`` (the heartbeat); a failure starts a gap."""
        try:
            write()
        except Exception:
            self._last = None
            self._steady_since = None
            raise
        now = self._clock()
        if self._steady_since is None or (
                self._last is not None and
                now - self._last > self._down_after):
            self._steady_since = now    # beating again after a gap
        self._last = now

    def may_judge(self):
        return (self._steady_since is not None and
                self._clock() - self._steady_since >= self.grace)
