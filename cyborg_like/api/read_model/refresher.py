"""The copies of one API process, and the thread keeping them current
(docs/design.md, "The read model").

A copy is current while
* it was read at the family's generation (``read_model_snapshot``, conductor
  RPC 1.17) and no announcement (``generations_changed``, a fanout cast)
  of a higher one has arrived since;
* a confirmation with the conductor succeeded within twice
  ``[api] read_model_check_interval`` (announcements can be lost);
* no write of this process to the family is newer than the copy
  (read-your-writes): a write's family is served by the conductor until a
  snapshot asked for after the write returned.
"""

import datetime
import itertools
import os
import socket
import threading
import time
import weakref

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.api.read_model import copy
from cyborg_like.common import context as context_lib
from cyborg_like.common import read_model as contract
from cyborg_like.common import rpc
from cyborg_like.common import worker

LOG = logging.getLogger(__name__)

DEPLOYABLES = contract.DEPLOYABLES

# Seconds an end's updated_at (whole seconds, the conductor's clock) is
# taken to be later than it says, against the wall clock of this process
# when its copy was asked for (clocks in sync, as deadlines need).
CLOCK_MARGIN = 2.0

_MODELS = weakref.WeakSet()

# How long a read after this process's own write of its family waits for
# the copy to catch up (a snapshot asked for after the write) before it
# goes to the conductor instead.
WRITE_WAIT = 0.05


class ReadModel:
    """The copies of one API process, and the threads keeping them."""

    def __init__(self, conductor_api, check_interval, background=True):
        """``background``: keep the copies with a thread and a listener
        of this process (False: only by calls to ``refresh`` and
        ``announce``, for tests)."""
        self._api = conductor_api
        self.check_interval = check_interval
        self._background = background
        self._lock = threading.Lock()
        self._refreshed = threading.Condition(self._lock)
        self._families = {}
        self._attributes = None
        self._announced = {}
        # When a generation-only family last moved by an announcement.
        self._heard = {}
        self._confirmed_at = None
        self._confirmed_wall = None
        self._writes = {}
        self._write_seq = itertools.count(1)
        self._last_write = 0
        self._worker = worker.Worker('read-model', self._run,
                                     join_timeout=10)
        self._pid = None
        self._server = None
        _MODELS.add(self)

    # What handlers use.
    def family(self, name, attributes=False, wait=True):
        """The current copy of family ``name`` (its attributes' copy with
        ``attributes``), or None; ``wait``: for the snapshot a write of
        this process asked for, a moment."""
        self._ensure_started()
        with self._lock:
            if name in self._writes and wait:
                # Read-your-writes: the snapshot the write asked for.
                self._refreshed.wait_for(lambda: name not in self._writes,
                                         WRITE_WAIT)
            family = self._families.get(name)
            if family is None or name in self._writes:
                return None
            if self._announced.get(name, (-1, 0))[0] > family.generation:
                return None
            if self._confirmed_at is None or time.monotonic() - \
                    self._confirmed_at > 2 * self.check_interval:
                return None
            return self._attributes if attributes else family

    def newer_than_copy(self, isotime):
        """Whether a change at ``isotime`` (the conductor's ISO 8601 UTC)
        may have committed after the current copy was asked for."""
        try:
            when = datetime.datetime.fromisoformat(isotime).timestamp()
        except (TypeError, ValueError):
            return True
        with self._lock:
            asked = self._confirmed_wall
        return asked is None or when + CLOCK_MARGIN >= asked

    def writing(self, families):
        """Around a write of ``families`` by this process."""
        return _Write(self, families)

    def announce(self, generations):
        """A conductor committed these {family: generation}."""
        with self._lock:
            newer = False
            for name, generation in generations.items():
                family = self._families.get(name)
                if name in contract.GENERATION_ONLY:
                    # Nothing to read: the announcement is the change.
                    if family is not None and generation > family.generation:
                        self._families[name] = copy.Family(generation, [],
                                                           None)
                        self._heard[name] = time.monotonic()
                    continue
                if family is None or generation > family.generation:
                    if generation > self._announced.get(name, (-1, 0))[0]:
                        self._announced[name] = (generation,
                                                 time.monotonic())
                    newer = True
        if newer:
            self._worker.wake()

    # Keeping the copies.
    def _ensure_started(self):
        pid = os.getpid()
        if self._pid == pid or not self._background:
            return
        with self._lock:
            if self._pid == pid:
                return
            # Started in the process serving requests (after a fork, in a
            # gunicorn worker), not in the one that built the app.
            self._pid = pid
            self._worker.start()

    def _start_listening(self):
        # What matters is the fanout queue, one per listener and expiring
        # when unused; the queue named after the server is never sent to,
        # so it is named after the host (one per host, not one per process
        # start: oslo.messaging does not let it expire).
        target = messaging.Target(topic=contract.TOPIC,
                                  server=socket.gethostname())
        try:
            self._server = rpc.get_server(target, [_Announcements(self)])
            self._server.start()
        except Exception as error:
            # Then only the periodic confirmation keeps the copies.
            LOG.warning('The read model does not hear announcements: %s',
                        error)
            self._server = None

    def stop(self):
        # The thread first: it is what starts the listener, and one
        # started after a look at ``_server`` here would be left polling
        # a transport that is going away (for ever, if its vhost is).
        self._worker.stop()
        if self._server is not None:
            try:
                self._server.stop()
                self._server.wait()
            except Exception as error:
                LOG.debug('Stopping the read model listener: %s', error)
            self._server = None
        self._pid = None
        _MODELS.discard(self)

    def _run(self):
        # Listening first: what is announced from then on is not missed
        # by the first snapshot. (Here, not on a request's thread: the
        # broker may take long to answer.)
        self._start_listening()
        while not self._worker.stopping:
            started = time.monotonic()
            # Cleared before the snapshot is asked for: an announcement
            # from now on is in it or wakes the next one.
            self._worker.clear()
            fetched = self.refresh()
            if self._worker.stopping:
                return
            # A refresh that read whole families costs the conductor too:
            # the next waits at least twice as long as this one took.
            if fetched:
                self._worker.pause(2 * (time.monotonic() - started))
            self._worker.wait(self.check_interval)

    def refresh(self):
        """One snapshot call: confirms the copies, replaces the families
        that changed. Returns whether any was replaced."""
        with self._lock:
            seq = self._last_write
            known = {name: family.generation
                     for name, family in self._families.items()}
        started, started_wall = time.monotonic(), time.time()
        try:
            answer = self._api.read_model_snapshot(
                context_lib.get_admin_context(), known)
        except Exception as error:
            LOG.debug('Read model check failed: %s', error)
            return False
        generations, dialect = answer['generations'], answer['dialect']
        built = {}
        for name, rows in answer['families'].items():
            if name == DEPLOYABLES:
                built[name] = copy.Family(
                    generations[name], rows['deployables'], dialect)
                built['attributes'] = copy.Family(
                    generations[name], rows['attributes'], dialect)
            else:
                built[name] = copy.Family(generations[name], rows,
                                          dialect)
        with self._lock:
            self._generations_only(generations, started)
            if 'attributes' in built:
                self._attributes = built.pop('attributes')
            self._families.update(built)
            for name in built:
                # Announcements heard before this snapshot was asked for
                # are in it (or are of a database since restored).
                if self._announced.get(name, (0, 0))[1] <= started:
                    self._announced.pop(name, None)
            for name in contract.FAMILIES:
                generation = generations.get(name)
                family = self._families.get(name)
                if family is not None and family.generation != generation:
                    # Moved while read (or went back: a restored
                    # database): not current until read again.
                    self._announced[name] = (
                        max(generation, family.generation + 1),
                        time.monotonic())
                    self._worker.wake()
            self._confirmed_at, self._confirmed_wall = started, started_wall
            # Writes that returned before this snapshot was asked for are
            # in it.
            self._writes = {name: write_seq for name, write_seq
                            in self._writes.items() if write_seq > seq}
            self._refreshed.notify_all()
        return bool(built)

    def _generations_only(self, generations, started):
        # Their generation is the snapshot's, unless an announcement
        # heard since it was asked for is newer (one heard before is in
        # it, or is of a database since restored).
        for name in contract.GENERATION_ONLY:
            if name not in generations:
                continue    # a conductor older than RPC 1.20
            family = self._families.get(name)
            if family is not None and family.generation > \
                    generations[name] and \
                    self._heard.get(name, 0) > started:
                continue
            if family is None or family.generation != generations[name]:
                self._families[name] = copy.Family(generations[name], [],
                                                   None)

    def wait_current(self, timeout):
        """Wait until every family's copy is current (tests, and the
        bench); False if not within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.family(name) is not None
                   for name in contract.FAMILIES):
                return True
            self._worker.wake()
            time.sleep(0.01)
        return False

    def reached(self, generations):
        """Whether every copy is at least at ``generations`` ({family:
        generation}, the database's); asks for a snapshot when not."""
        self._ensure_started()
        with self._lock:
            behind = [name for name, generation in generations.items()
                      if self._families.get(name) is None
                      or self._families[name].generation < generation]
        if behind:
            self._worker.wake()
        return not behind

    def _wrote(self, families):
        with self._lock:
            seq = self._last_write = next(self._write_seq)
            for name in families:
                self._writes[name] = seq
        self._worker.wake()


class _Write:
    def __init__(self, model, families):
        self._model = model
        self._families = families

    def __enter__(self):
        # Served by the conductor from now until a later snapshot.
        with self._model._lock:
            for name in self._families:
                self._model._writes[name] = float('inf')
        return self

    def __exit__(self, *exc):
        # Whatever the outcome (a timeout may still have committed).
        self._model._wrote(self._families)
        return False


class _Announcements:
    """The fanout endpoint every API process listens on."""

    target = messaging.Target(version=contract.VERSION)

    def __init__(self, model):
        self._model = weakref.proxy(model)

    def generations_changed(self, context, generations):
        self._model.announce(generations)


def stop_all():
    """Stop every read model of this process (before rpc.cleanup)."""
    for model in list(_MODELS):
        model.stop()


def wait_current(timeout=10.0):
    """Wait until the copies of every read model of this process are
    current; False if one is not within ``timeout`` seconds."""
    return all(model.wait_current(timeout) for model in list(_MODELS))


def wait_for(generations, timeout=10.0):
    """Wait until every read model of this process holds at least
    ``generations`` (tests and the bench, which can read the database's:
    another client's writes are otherwise visible within the staleness
    bound only); False if one does not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(model.reached(generations) for model in list(_MODELS)):
            return True
        time.sleep(0.01)
    return False


