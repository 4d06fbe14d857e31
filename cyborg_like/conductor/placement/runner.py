"""The conductor's periodic Placement sync, shared with other conductors."""

import datetime
import threading

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from cyborg_like.common import periodic
from cyborg_like.conductor.placement import client as rest
from cyborg_like.conductor.placement import host_sync
from cyborg_like.conductor.placement import names
from cyborg_like.db import hosts
from cyborg_like.db import placement_sync

LOG = logging.getLogger(__name__)


class PlacementSync:
    """Runs the sync every [placement] sync_interval; off without auth."""

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()
        self._client = None
        self._names = None
        self._checked = False
        self._missing = set()
        self._periodic = periodic.Periodic('placement-sync', [
            (conf.placement.sync_interval, self.sync_now)])
        self._started = False

    @property
    def enabled(self):
        return bool(self.conf.placement.auth_type)

    @property
    def _interval(self):
        return datetime.timedelta(seconds=self.conf.placement.sync_interval)

    def start(self):
        if not self.enabled:
            LOG.info('[placement] auth_type is not set: resource providers '
                     'are not synced to Placement')
            return
        self._periodic.start()
        self._started = True

    def stop(self):
        self._periodic.stop()
        self._started = False

    def first_run_done(self):
        """True once the periodic's first run (at start) ended, or when
        no periodic runs."""
        return not self._started or self._periodic.ran_each_once()

    def sync_now(self):
        """One run; returns ``{'synced': [...], 'pending': [...]}`` (hosts
        another conductor holds are in neither) or None when sync is off or
        Placement could not be reached."""
        if not self.enabled:
            return None
        with self._lock:
            return self._run()

    def _run(self):
        if not self._checked:
            # Placement may have changed while no conductor was running:
            # check the hosts nobody synced within an interval.
            placement_sync.mark_unsynced_dirty(hosts.utcnow()
                                               - self._interval)
            self._checked = True
        if not self._connect():
            return None
        result = {'synced': [], 'pending': []}
        hosts_to_sync = placement_sync.hosts_to_sync()
        try:
            for hostname, mark in hosts_to_sync:
                synced = self._claimed_sync(hostname, mark)
                if synced is not None:
                    result['synced' if synced else 'pending'].append(
                        hostname)
        except rest.Unreachable as error:
            LOG.warning('Placement is unreachable (%s); %d host(s) stay '
                        'marked and are synced at the next run', error,
                        len(hosts_to_sync) - len(result['synced']))
            return None
        return result

    def _connect(self):
        if self._client is None:
            try:
                self._client = rest.PlacementClient(self.conf)
            except ks_exc.ClientException as error:
                LOG.error('Cannot set up the Placement client from '
                          '[placement]: %s; no sync until it is fixed',
                          error)
                return False
            self._names = names.KnownNames(self._client)
        return True

    def _claimed_sync(self, hostname, mark):
        """Whether the host is in line now; None if it is not ours to
        sync (another conductor holds it, or it changed meanwhile)."""
        # A claim outlives one sync of a host by far; if this conductor
        # dies holding it, another takes the host over an interval later.
        until = hosts.utcnow() + self._interval
        if not placement_sync.claim(hostname, mark, until):
            return None
        synced = False
        try:
            synced = self._sync_host(hostname)
        finally:
            placement_sync.release(hostname, mark, synced)
        return synced

    def _sync_host(self, hostname):
        try:
            return self._try_host(hostname)
        except rest.UnexpectedAnswer as error:
            LOG.error('Could not sync host %s to Placement: %s; will retry '
                      'at the next sync', hostname, error)
            return False

    def _try_host(self, hostname):
        deployables = placement_sync.host_deployables(hostname)
        found = self._client.providers(name=hostname)
        if not found:
            # No compute node: the host is in no aggregate of Placement.
            placement_sync.set_aggregates(hostname, [])
            if not deployables:
                return True
            if hostname not in self._missing:
                self._missing.add(hostname)
                LOG.warning(
                    'No compute node resource provider named %r in '
                    'Placement: the accelerators of that host cannot be '
                    'published until Nova registers it under exactly this '
                    'name (nova-compute names it after the hypervisor '
                    'hostname; the agent reports as its [DEFAULT] host, '
                    'which must match, short name or FQDN alike). Will '
                    'retry at every sync', hostname)
            return False
        if hostname in self._missing:
            self._missing.discard(hostname)
            LOG.info('Compute node resource provider %r found in Placement',
                     hostname)
        in_line = host_sync.HostSync(self._client, self._names,
                                     hostname).run(deployables, found[0])
        # One more request per sync: the compute node's aggregates, which
        # the availability feed groups by and rollouts select by.
        _generation, aggregates = self._client.aggregates(found[0]['uuid'])
        if placement_sync.set_aggregates(hostname, aggregates):
            LOG.info('Host %s is in the Placement aggregates %s now',
                     hostname, ', '.join(sorted(aggregates)) or '(none)')
        return in_line
