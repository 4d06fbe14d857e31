"""Programming of a region, one job at a time and the newest operation
last.

A conductor that sees a host go down fails the operation under way there
and may start another on the same region (a rollout's rollback programs
the old bitstream). The first job's message can still reach the agent
later, held by the broker through a partition: both then arrive together.
Run side by side, or the older last, they would leave the region with the
bitstream of an operation the conductor failed. Each operation's job
carries its sequence (the operation's row id, increasing); a job older
than one already run on its region is refused, and the jobs of a region
never run at once. Bind jobs carry no sequence: they are only serialized
(a region in use by a binding is never programmed by an operation).
"""

import contextlib
import json
import threading

from cyborg_like.common import exception


class RegionOrder:
    def __init__(self):
        self._lock = threading.Lock()
        self._regions = {}      # region key -> [its lock, newest sequence]

    @contextlib.contextmanager
    def turn(self, job):
        """While ``job`` may program its region; DriverError when an
        operation newer than its own already did."""
        key = (json.dumps(job['controlpath_id'], sort_keys=True),
               job['deployable_name'])
        with self._lock:
            region = self._regions.setdefault(key, [threading.Lock(), 0])
        with region[0]:
            sequence = job.get('sequence')
            if sequence is not None:
                if sequence < region[1]:
                    raise exception.DriverError(
                        driver=job['driver_name'],
                        reason='region %s was programmed by a newer '
                        'operation since this one was sent; not programmed'
                        % job['deployable_name'])
                region[1] = sequence
            yield
