"""What is on this host, and keeping the conductor told.

The tracker runs every enabled driver, merges their devices into one
inventory, and sends it to the conductor only when it differs from the last
one the conductor accepted (or when the conductor asks). A driver that fails
keeps its last known devices and never stops the others.
"""

import threading

from oslo_log import log as logging
import stevedore

from cyborg_like.common import context as ctx
from cyborg_like.common import inventory
from cyborg_like.drivers import base

LOG = logging.getLogger(__name__)

AGENT_VERSION = '1.0'


def load_drivers(conf):
    def _on_failure(manager, entrypoint, exc):
        LOG.error('Could not load accelerator driver %s: %s',
                  entrypoint.name, exc)

    manager = stevedore.NamedExtensionManager(
        base.NAMESPACE, names=conf.agent.enabled_drivers,
        invoke_on_load=True, invoke_args=(conf,),
        on_load_failure_callback=_on_failure, name_order=True)
    missing = set(conf.agent.enabled_drivers) - set(manager.names())
    for name in sorted(missing):
        LOG.error('Accelerator driver %s is enabled but not available', name)
    return {ext.name: ext.obj for ext in manager}


class ResourceTracker:
    def __init__(self, host, conf, conductor_api, drivers=None):
        self.host = host
        self.conductor_api = conductor_api
        self.drivers = load_drivers(conf) if drivers is None else drivers
        self._known = {}            # driver name -> last devices it found
        self._reported_hash = None  # the inventory the conductor accepted
        self._restored = False      # handles in use checked since start
        self._lock = threading.Lock()

    def discover(self):
        """Run every driver; return the host's whole inventory."""
        for name, driver in self.drivers.items():
            try:
                found = driver.discover()
                self._known[name] = [device.to_dict() for device in found]
            except Exception:
                LOG.exception('Driver %s failed to discover devices; keeping '
                              'its last known %d device(s)', name,
                              len(self._known.get(name, [])))
        devices = [d for found in self._known.values() for d in found]
        return sorted(devices,
                      key=lambda d: inventory.canonical(d['controlpath_id']))

    def update_inventory(self, force=False):
        """Discover, and report to the conductor if anything changed."""
        with self._lock:
            devices = self.discover()
            digest = inventory.fingerprint(devices)
            if digest == self._reported_hash and not force:
                return False
            summary = self.conductor_api.report_inventory(
                ctx.get_admin_context(), self.host, devices, digest)
            self._reported_hash = digest
            bound = summary.pop('bound', [])
            LOG.info('Reported %d device(s) to the conductor: %s',
                     len(devices), summary)
            if not self._restored:
                self._restore(bound)
            return True

    def _restore(self, bound):
        """After a start, make sure what workloads hold still exists on
        the host (an mdev is gone after a reboot). Preparing is idempotent:
        drivers read the hardware and create only what is missing."""
        self._restored = True
        for item in bound:
            driver = self.drivers.get(item['driver_name'])
            if not isinstance(driver, base.AttachPreparing):
                continue
            try:
                driver.prepare_attach_handle(item['controlpath_id'],
                                             item['attach_handle'])
            except Exception:
                LOG.exception('Could not restore attach handle %s',
                              item['attach_handle'])
        if bound:
            LOG.info('Checked %d attach handle(s) held by workloads',
                     len(bound))

    def heartbeat(self):
        self.conductor_api.heartbeat(ctx.get_admin_context(), self.host,
                                     AGENT_VERSION, self._reported_hash,
                                     self.health())

    def health(self):
        """Readings of every driver that reports health; a failing driver
        is logged and left out."""
        readings = []
        for name, driver in self.drivers.items():
            if not isinstance(driver, base.HealthReporting):
                continue
            try:
                readings += [h.to_dict() for h in driver.health()]
            except Exception:
                LOG.exception('Driver %s failed to report health', name)
        return readings
