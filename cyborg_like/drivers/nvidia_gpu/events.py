"""GPU errors as they happen: NVML events, classified and held.

A listener thread registers Xid critical errors and double-bit ECC errors
on every GPU (those a GPU or driver does not support are skipped, said
once) and waits for them with a bounded timeout, so that it can stop. Each
Xid is classified with :data:`XID_CLASSES` (the table of docs/health.md,
"GPU Xid classes"):

fatal
    The GPU must not take new work until it is reset or serviced: the
    event makes the GPU's health readings unhealthy, with the Xid, what it
    means and when it came, for ``[nvidia_gpu] fatal_xid_hold`` seconds (a
    new fatal event restarts the hold). A double-bit ECC event counts as
    fatal too.
informational
    Errors of one application (its own page fault, an exception of its
    channel) that leave the GPU fit for others: logged, and kept as the
    GPU's last Xid in its readings, but the GPU stays healthy.

An Xid the table does not name is informational, logged as a warning:
NVML raises Xid events for application faults every day, and a verdict
nobody can read the reason of would drain GPUs for nothing.

Whoever watches (the agent) is told through ``on_change()`` when a GPU's
verdict changed: a fatal event came, or a hold ran out.
"""

import collections
import datetime
import threading
import time

from oslo_log import log as logging
import pynvml

from cyborg_like.common import worker
from cyborg_like.drivers.nvidia_gpu import nvml

LOG = logging.getLogger(__name__)

XidClass = collections.namedtuple('XidClass', 'fatal meaning')

FATAL = True
INFORMATIONAL = False

#: Xid number -> its class and meaning (our words; NVIDIA's Xid catalogue
#: is the reference). Keep docs/health.md in step.
XID_CLASSES = {
    # Informational: one application's fault; the GPU serves others.
    13: XidClass(INFORMATIONAL, 'graphics engine exception'),
    31: XidClass(INFORMATIONAL, 'GPU memory page fault'),
    32: XidClass(INFORMATIONAL, 'invalid or corrupted push buffer stream'),
    43: XidClass(INFORMATIONAL, 'GPU stopped processing on a channel'),
    45: XidClass(INFORMATIONAL, 'preemptive cleanup after earlier errors'),
    68: XidClass(INFORMATIONAL, 'video decoder exception'),
    69: XidClass(INFORMATIONAL, 'graphics engine class error'),
    # Fatal: reset or service the GPU before it takes new work.
    48: XidClass(FATAL, 'double-bit ECC error'),
    62: XidClass(FATAL, 'internal micro-controller halt'),
    63: XidClass(FATAL, 'row remapping or page retirement recorded; '
                        'pending a GPU reset'),
    64: XidClass(FATAL, 'row remapping or page retirement failure'),
    74: XidClass(FATAL, 'NVLink error'),
    79: XidClass(FATAL, 'GPU has fallen off the bus'),
    92: XidClass(FATAL, 'high single-bit ECC error rate'),
    94: XidClass(FATAL, 'contained ECC error'),
    95: XidClass(FATAL, 'uncontained ECC error'),
    119: XidClass(FATAL, 'GSP RPC timeout'),
    120: XidClass(FATAL, 'GSP error'),
    140: XidClass(FATAL, 'unrecovered ECC error'),
}

UNKNOWN = XidClass(INFORMATIONAL, 'not in the class table')

#: What the listener registers on each GPU.
WATCHED = nvml.EVENT_XID | nvml.EVENT_DOUBLE_BIT_ECC

# How long one wait for an event may block: the listener's stop latency,
# and how late a hold may be seen to run out.
WAIT_MS = 500
# Pause before listening again after NVML failed under the listener.
RETRY_SECONDS = 5.0
# How long watch_health waits for the listener to have registered.
READY_SECONDS = 10.0


def classify(xid):
    """The :class:`XidClass` of Xid number ``xid``."""
    return XID_CLASSES.get(xid, UNKNOWN)


def _timestamp(when):
    return datetime.datetime.fromtimestamp(
        when, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


class Latch:
    """Fatal events per GPU uuid, each held for ``hold`` seconds, and the
    last Xid of every GPU. Thread-safe: the listener writes, health()
    reads."""

    def __init__(self, hold, clock=time.monotonic, wall=time.time):
        self.hold = hold
        self._clock = clock
        self._wall = wall
        self._held = {}         # gpu uuid -> {key: (reason, until)}
        self._last_xid = {}     # gpu uuid -> dict
        self._lock = threading.Lock()

    def xid(self, gpu_uuid, xid):
        """Record Xid ``xid``; True when it changed the GPU's verdict (a
        fatal one: unhealthy, or a new reason)."""
        kind = classify(xid)
        when = self._wall()
        with self._lock:
            self._last_xid[gpu_uuid] = {
                'xid': xid, 'meaning': kind.meaning, 'fatal': kind.fatal,
                'at': _timestamp(when)}
        if not kind.fatal:
            log = LOG.warning if kind is UNKNOWN else LOG.info
            log('GPU %s raised Xid %d (%s): recorded, the GPU stays '
                'healthy', gpu_uuid, xid, kind.meaning)
            return False
        reason = 'Xid %d (%s) at %s' % (xid, kind.meaning, _timestamp(when))
        LOG.error('GPU %s raised fatal %s', gpu_uuid, reason)
        return self._hold(gpu_uuid, ('xid', xid), reason)

    def double_bit_ecc(self, gpu_uuid):
        reason = 'double-bit ECC error at %s' % _timestamp(self._wall())
        LOG.error('GPU %s raised a %s', gpu_uuid, reason)
        return self._hold(gpu_uuid, ('dbe',), reason)

    def _hold(self, gpu_uuid, key, reason):
        if self.hold <= 0:
            return False
        with self._lock:
            # The same Xid again replaces its entry: a storm stays one line.
            self._held.setdefault(gpu_uuid, {})[key] = (
                reason, self._clock() + self.hold)
        return True

    def reasons(self, gpu_uuid):
        """The held fatal events of the GPU, oldest first."""
        with self._lock:
            held = self._held.get(gpu_uuid, {})
            now = self._clock()
            return [reason for reason, until in sorted(
                held.values(), key=lambda item: item[1]) if until > now]

    def last_xid(self, gpu_uuid):
        with self._lock:
            found = self._last_xid.get(gpu_uuid)
            return dict(found) if found else None

    def expire(self):
        """Forget holds that ran out; True when a GPU has none left."""
        now = self._clock()
        cleared = False
        with self._lock:
            for gpu_uuid, held in list(self._held.items()):
                for key, (_, until) in list(held.items()):
                    if until <= now:
                        del held[key]
                if not held:
                    del self._held[gpu_uuid]
                    cleared = True
                    LOG.info('GPU %s: the hold of its fatal events ran out',
                             gpu_uuid)
        return cleared


class Listener:
    """The thread waiting for NVML events of every GPU."""

    def __init__(self, latch, on_change, wait_ms=WAIT_MS):
        self.latch = latch
        self.on_change = on_change
        self.wait_ms = wait_ms
        self._worker = worker.Worker('nvidia-gpu-events', self._run)
        self._ready = threading.Event()
        self._said_unsupported = set()

    def start(self):
        """Start listening; return once the GPUs are registered (or it
        gave up), so that no event after this call is missed."""
        self._ready.clear()
        self._worker.start()
        self._ready.wait(READY_SECONDS)

    def stop(self):
        self._worker.stop()

    @property
    def alive(self):
        return self._worker.alive

    def _run(self):
        try:
            while not self._worker.stopping:
                try:
                    if not self._listen():
                        return
                except pynvml.NVMLError_LibraryNotFound:
                    return      # no NVIDIA driver: discover() says so
                except Exception:
                    LOG.exception('Listening to NVIDIA GPU events failed; '
                                  'trying again in %ss', RETRY_SECONDS)
                    self._ready.set()
                    self._worker.pause(RETRY_SECONDS)
        finally:
            self._ready.set()

    def _listen(self):
        """One NVML session of listening, until asked to stop; False when
        there is nothing to listen to."""
        with nvml.session():
            try:
                events = nvml.event_set()
            except (pynvml.NVMLError_NotSupported,
                    pynvml.NVMLError_FunctionNotFound) as exc:
                self._say_unsupported('driver', 'this NVIDIA driver', exc)
                return False
            try:
                gpus = self._register(events)
                self._ready.set()
                while not self._worker.stopping:
                    event = nvml.wait_event(events, self.wait_ms)
                    changed = event is not None and self._take(gpus, event)
                    changed = self.latch.expire() or changed
                    if changed:
                        self._tell()
            finally:
                nvml.free_event_set(events)
        return True

    def _register(self, events):
        """``{handle key: gpu uuid}`` of the GPUs registered."""
        gpus = {}
        for index in range(nvml.device_count()):
            try:
                gpu_handle = nvml.handle(index)
                gpu_uuid = nvml.uuid(gpu_handle)
            except pynvml.NVMLError as exc:
                LOG.warning('NVIDIA GPU %d does not answer NVML (%s): not '
                            'listening to its events', index, exc)
                continue
            try:
                registered = nvml.register_events(gpu_handle, WATCHED,
                                                  events)
            except (pynvml.NVMLError_NotSupported,
                    pynvml.NVMLError_FunctionNotFound) as exc:
                self._say_unsupported(gpu_uuid, 'GPU %s' % gpu_uuid, exc)
                continue
            if not registered:
                self._say_unsupported(gpu_uuid, 'GPU %s' % gpu_uuid,
                                      'supports neither Xid nor ECC events')
                continue
            gpus[nvml.handle_key(gpu_handle)] = gpu_uuid
        LOG.info('Listening to Xid and ECC events of %d NVIDIA GPU(s)',
                 len(gpus))
        return gpus

    def _say_unsupported(self, key, what, why):
        if key not in self._said_unsupported:
            self._said_unsupported.add(key)
            LOG.info('%s cannot report GPU errors as they happen (%s): its '
                     'health is known from the periodic checks only',
                     what, why)

    def _take(self, gpus, event):
        gpu_uuid = gpus.get(event.gpu)
        if gpu_uuid is None:
            return False
        if event.type & nvml.EVENT_XID:
            return self.latch.xid(gpu_uuid, int(event.data))
        if event.type & nvml.EVENT_DOUBLE_BIT_ECC:
            return self.latch.double_bit_ecc(gpu_uuid)
        return False

    def _tell(self):
        try:
            self.on_change()
        except Exception:
            LOG.exception('Telling of a GPU health change failed')
