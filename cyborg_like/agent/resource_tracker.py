"""What is on this host, and keeping the conductor told.

The tracker runs every enabled driver, merges their devices into one
inventory, and sends it to the conductor only when it differs from the last
one the conductor accepted (or when the conductor asks). A driver that fails
keeps its last known devices and never stops the others.

Drivers that hear of faults as they happen (base.HealthWatching) make it
send a heartbeat at once, marked urgent, which the conductor writes without
waiting for its next batch. Urgent beats are coalesced: at most one is in
flight, changes meanwhile are folded into the next one, and two are at
least URGENT_MIN_SPACING apart, so an event storm cannot flood the
conductor.
"""

import threading
import time

from oslo_log import log as logging
import oslo_messaging as messaging
import stevedore

from cyborg_like.common import context as ctx
from cyborg_like.common import describe
from cyborg_like.common import inventory
from cyborg_like.common import worker
from cyborg_like.drivers import base

LOG = logging.getLogger(__name__)

# 1.1: confirms every release of an attach handle (conductor 1.6).
# 1.2: runs driver playbooks (agent RPC 1.4, conductor 1.10).
AGENT_VERSION = '1.2'

# What a call to the conductor meets while no conductor is listening yet or
# the broker is away: expected at start and during outages, not a bug.
CONDUCTOR_AWAY = (messaging.MessagingTimeout,
                  messaging.MessageDeliveryFailure)
FIRST_REPORT_FIRST_PAUSE = 0.1
# Seconds between the starts of two urgent heartbeats, at least.
URGENT_MIN_SPACING = 0.25


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
        self.conf = conf
        self.conductor_api = conductor_api
        self.drivers = load_drivers(conf) if drivers is None else drivers
        self._known = {}            # driver name -> last devices it found
        self._reported_hash = None  # the inventory the conductor accepted
        self._restored = False      # handles in use checked since start
        self._unconfirmed = {}      # handle uuid -> erased, to tell again
        self._lock = threading.Lock()
        # One heartbeat at a time (periodic or urgent).
        self._beating = threading.Lock()
        self._urgent = _UrgentBeats(self._urgent_heartbeat)

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
            releasing = summary.pop('releasing', [])
            LOG.info('Reported %d device(s) to the conductor: %s',
                     len(devices), describe.counts(summary))
            if not self._restored:
                self._restore(bound)
                # Releases the conductor asked for while this agent was
                # away: carry them out now.
                for item in releasing:
                    self.release(item)
            return True

    def release(self, released):
        """Undo a handle's preparation (an FPGA driver may erase its
        region), then tell the conductor the handle is free again."""
        driver = self.drivers.get(released['driver_name'])
        erased = False
        if isinstance(driver, base.AttachPreparing):
            try:
                erased = bool(driver.release_attach_handle(
                    released['controlpath_id'], released['attach_handle']))
            except Exception:
                # What the region holds now is unknown: say it lost its
                # bitstream, so the next binding programs it again.
                LOG.exception('Could not release attach handle %s',
                              describe.attach_handle(
                                  released['attach_handle']))
                erased = True
        if released.get('confirm'):
            self._unconfirmed[released['attach_handle']['uuid']] = erased
            self._confirm_releases()

    def _confirm_releases(self):
        """Tell the conductor of releases it has not heard of; what fails
        is told again with the next heartbeat."""
        if not self.conductor_api.can_confirm_releases():
            self._unconfirmed.clear()
            return
        for uuid, erased in list(self._unconfirmed.items()):
            try:
                self.conductor_api.handle_released(
                    ctx.get_admin_context(), uuid, erased)
            except Exception as error:
                LOG.warning('Could not confirm the release of attach handle '
                            '%s yet (%s); will retry', uuid, error)
                return
            self._unconfirmed.pop(uuid, None)

    def report_first(self, stopping, max_pause):
        """Report until a conductor answers, pausing 0.1 s doubling up to
        ``max_pause`` between tries: the agent may start before the
        conductor or the broker. A try that meets no conductor is one
        warning line. Returns False if ``stopping`` was set first.

        A conductor that answers with an error (an inventory it refuses)
        ends the quick retries: that is logged with its traceback and left
        to the discovery loop, which tries again at its interval.
        """
        pause = FIRST_REPORT_FIRST_PAUSE
        while not stopping.is_set():
            try:
                self.update_inventory(force=True)
                return True
            except CONDUCTOR_AWAY as error:
                LOG.warning('No conductor took the first inventory report '
                            'of %s yet (%s); trying again in %.1fs',
                            self.host, type(error).__name__, pause)
            except Exception:
                LOG.exception('First inventory report of %s failed; the '
                              'discovery loop will try again', self.host)
                return True
            stopping.wait(pause)
            pause = min(pause * 2, max_pause)
        return False

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
                              describe.attach_handle(item['attach_handle']))
        if bound:
            LOG.info('Checked %d attach handle(s) held by workloads',
                     len(bound))

    def heartbeat(self, urgent=False, **delivery):
        """Send the readings of every driver; ``urgent`` asks the conductor
        to write them at once (a conductor before RPC 1.12 takes a plain
        heartbeat); ``delivery``: ``cast_ttl`` or ``stream_ttl`` for a beat
        that needs no answer (regular_heartbeat), else a call."""
        with self._beating:
            if self._unconfirmed:
                self._confirm_releases()
            extra = {'urgent': True} if urgent else delivery
            self.conductor_api.heartbeat(
                ctx.get_admin_context(), self.host, AGENT_VERSION,
                self._reported_hash, self.health(), **extra)

    def regular_heartbeat(self):
        """The periodic's beat, sent as ``[agent] heartbeat_delivery``
        says. A streamed or cast beat that waited longer than two
        intervals is dropped unread: the next one carries newer readings."""
        ttl = 2 * self.conf.agent.heartbeat_interval
        delivery = self.conf.agent.heartbeat_delivery
        self.heartbeat(**({'stream_ttl': ttl} if delivery == 'stream' else
                          {'cast_ttl': ttl} if delivery == 'cast' else {}))

    def _urgent_heartbeat(self):
        try:
            self.heartbeat(urgent=True)
        except CONDUCTOR_AWAY as error:
            LOG.warning('Urgent heartbeat: no conductor answered (%s); the '
                        'next heartbeat carries the change',
                        type(error).__name__)
        except Exception:
            LOG.exception('Urgent heartbeat failed; the next heartbeat '
                          'carries the change')

    def health_changed(self):
        """A watching driver saw a device's health change: send the
        readings now (coalesced). Called from the driver's thread."""
        self._urgent.want()

    def urgent_sent(self, timeout=None):
        """Wait until every urgent heartbeat wished for so far is sent and
        none is left to send; False after ``timeout`` seconds. Lets a test
        count urgent beats without waiting on time."""
        return self._urgent.idle(timeout)

    def start_watching(self):
        """Start the health watchers of the drivers that have one."""
        self._urgent.start()
        for name, driver in self.drivers.items():
            if not isinstance(driver, base.HealthWatching):
                continue
            try:
                driver.watch_health(self.health_changed)
            except Exception:
                LOG.exception('Driver %s could not start watching health; '
                              'its devices are checked at every heartbeat '
                              'only', name)

    def stop_watching(self):
        for name, driver in self.drivers.items():
            if not isinstance(driver, base.HealthWatching):
                continue
            try:
                driver.stop_watching()
            except Exception:
                LOG.exception('Driver %s failed to stop watching health',
                              name)
        self._urgent.stop()

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


class _UrgentBeats:
    """Runs ``send`` on its own thread when wanted: one run at a time,
    wishes made during a run folded into one more run, runs at least
    URGENT_MIN_SPACING apart."""

    def __init__(self, send):
        self._send = send
        self._worker = worker.Worker('agent-urgent-heartbeat', self._run)
        # Set while no run is under way or wanted (see idle()); the lock
        # keeps a wish and the run loop's look at it in one order.
        self._idle = threading.Event()
        self._lock = threading.Lock()

    def start(self):
        if self._worker.started:
            return
        self._worker.start()

    def want(self):
        with self._lock:
            self._idle.clear()
            self._worker.wake()

    def idle(self, timeout=None):
        """Wait until every run wished for so far has ended and none is
        left to run; False if that takes more than ``timeout`` seconds.
        How a test sees a storm folded into one run without waiting on
        time."""
        return self._idle.wait(timeout)

    def stop(self):
        self._worker.stop()
        self._worker.clear()

    def _run(self):
        while True:
            with self._lock:
                if not self._worker.woken():
                    self._idle.set()
            self._worker.wait()
            if self._worker.stopping:
                return
            self._worker.clear()    # what comes from now on: next run
            started = time.monotonic()
            self._send()
            pause = URGENT_MIN_SPACING - (time.monotonic() - started)
            if pause > 0 and self._worker.pause(pause):
                return
