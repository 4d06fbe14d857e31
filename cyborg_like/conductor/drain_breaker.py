"""When health readings drain a device, and the drain circuit breaker
(docs/health.md): the ``[health]`` policy, with no SQL.

A device's unhealthy reading asks for a drain and starts its count of
healthy readings over; ``recovery_checks`` healthy readings in a row
return a drained or flagged device to service. A drain asked for is made
only while automatic drains are on and the breaker holds: fewer than
``max_drains`` automatic drains fleet-wide and ``max_drains_per_host`` on
the device's host within ``breaker_window``; otherwise the device is only
flagged. db/health.py locks the devices, counts the drains and moves the
devices; it asks a ``DrainBreaker`` (built by the conductor from its
``[health]`` options and passed down through db/heartbeats.py ``ingest``)
what to do.
"""

import collections

from cyborg_like.common import states

# What the readings of one batch ask of the devices they may move: drain
# [(row, reasons)], recover [(row, reasons)], and the healthy readings
# counted {device id: count}.
Triage = collections.namedtuple('Triage', 'drain recover checks')


class DrainBreaker:
    def __init__(self, policy):
        """``policy``: the ``[health]`` options (or alike)."""
        self.policy = policy

    @property
    def window(self):
        """Seconds over which automatic drains are counted."""
        return self.policy.breaker_window

    def triage(self, rows, readings):
        """What each reading asks: ``rows`` are the devices (id,
        service_state, healthy_checks), ``readings`` {device id:
        (healthy, reasons)}."""
        drain, recover, checks = [], [], {}
        for row in rows:
            healthy, reasons = readings[row.id]
            if not healthy:
                checks[row.id] = 0
                if row.service_state != states.DRAINED:
                    drain.append((row, reasons))
            elif row.healthy_checks + 1 >= self.policy.recovery_checks:
                recover.append((row, reasons))
            else:
                checks[row.id] = row.healthy_checks + 1
        return Triage(drain, recover, checks)

    def status(self, per_host, fleet):
        """Whether the drains counted ({host: count}, fleet count: db/
        health.py ``drain_counts``) open the breaker, fleet-wide and per
        host (for metrics, alerts and operators)."""
        policy = self.policy
        return {
            'window': policy.breaker_window,
            'drains': fleet,
            'max_drains': policy.max_drains,
            'open': fleet >= policy.max_drains,
            'hosts': {host: {'drains': count,
                             'open': count >= policy.max_drains_per_host}
                      for host, count in sorted(per_host.items())},
            'max_drains_per_host': policy.max_drains_per_host,
        }

    def split(self, wanted, drains):
        """Split the devices to drain ``wanted`` [(row with hostname,
        reasons)] into (drain, only flag). ``drains()``: the automatic
        drains within the window, ({host: count}, fleet count), read
        only when the breaker must be asked."""
        if not wanted:
            return [], []
        if not self.policy.auto_drain:
            return [], wanted
        per_host, fleet = drains()
        drain, flag = [], []
        for row, reasons in wanted:
            if (fleet < self.policy.max_drains
                    and per_host.get(row.hostname, 0)
                    < self.policy.max_drains_per_host):
                fleet += 1
                per_host[row.hostname] = per_host.get(row.hostname, 0) + 1
                drain.append((row, reasons))
            else:
                flag.append((row, reasons))
        return drain, flag
