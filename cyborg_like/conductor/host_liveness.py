"""Telling the operator when a host goes down or comes back.

A host is up while its agent heartbeats (state computed on read from
``last_heartbeat`` and [conductor] host_down_after); nothing is written
when it goes silent. This periodic sweep of the conductor compares the
hosts' states with those it saw last time and logs each change once per
conductor (with several conductors, each logs it) and records it for the
availability feed. Its first sweep after a start logs one summary line
instead.
"""

import datetime

from oslo_log import log as logging

from cyborg_like.db import availability
from cyborg_like.db import hosts

LOG = logging.getLogger(__name__)


class HostLiveness:
    def __init__(self, down_after):
        self.down_after = down_after
        # hostname -> (up, last heartbeat) as last seen; None before the
        # first sweep.
        self._seen = None

    def sweep(self):
        now = hosts.utcnow()
        cutoff = now - datetime.timedelta(seconds=self.down_after)
        current = {host: (beat is not None and beat >= cutoff, beat)
                   for host, beat in hosts.last_heartbeats().items()}
        if self._seen is None:
            down = sorted(host for host, (up, _) in current.items()
                          if not up)
            LOG.info('Hosts: %d up, %d down%s', len(current) - len(down),
                     len(down), ' (%s)' % ', '.join(down) if down else '')
        else:
            for host, (up, beat) in sorted(current.items()):
                self._log_change(host, self._seen.get(host), up, beat, now)
            # What a host offers follows its liveness (the availability
            # feed); with several conductors each records it, harmlessly.
            availability.changed_now(sorted(
                host for host, (up, _) in current.items()
                if host in self._seen and self._seen[host][0] != up))
        self._seen = current

    def _log_change(self, host, before, up, beat, now):
        if before is None:
            if up:
                LOG.info('Host %s is up (new host)', host)
            return
        was_up, last_beat = before
        if was_up and not up:
            LOG.warning('Host %s is down: no heartbeat for %.0f s ([conductor]'
                        ' host_down_after = %s s); its devices are not '
                        'bound', host, _seconds(now, beat), self.down_after)
        elif up and not was_up:
            silent = _seconds(beat, last_beat)
            LOG.info('Host %s is up again after %s without heartbeats', host,
                     '%.0f s' % silent if silent is not None else 'a time')


def _seconds(later, earlier):
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds()
