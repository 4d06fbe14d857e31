"""The read model: devices, deployables, attributes and device profiles
served from memory in each API process (docs/design.md, "The read model").

``ModelledConductorAPI`` stands in for the conductor RPC client: a list or
show of a family it holds a current copy of is answered from the copy,
exactly as the conductor's query would answer it; anything else (another
sort key, a marker or uuid it does not hold, a filter whose meaning
depends on the database's collation, a copy not known to be current) goes
to the conductor. Handlers, policy and views are the same either way.

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
import hashlib
import itertools
import os
import re
import socket
import threading
import time
import weakref

import oslo_messaging as messaging
from oslo_log import log as logging
from pecan import hooks
import webob.exc

from cyborg_like.api import arq_cache
from cyborg_like.api import hooks as hooks_lib
from cyborg_like.api import policy
from cyborg_like.common import context as context_lib
from cyborg_like.common import read_model as contract
from cyborg_like.common import rpc
from cyborg_like.common import states

LOG = logging.getLogger(__name__)

DEVICES = contract.DEVICES
DEPLOYABLES = contract.DEPLOYABLES
PROFILES = contract.DEVICE_PROFILES

# Conductor RPC methods that change a family, by the families they change:
# this process serves those families from the conductor after calling one
# until its copy caught up (read-your-writes).
WRITES = {
    'set_device_status': (DEVICES,),
    'program_deployable': (DEPLOYABLES,),
    'flash_device_firmware': (DEVICES, DEPLOYABLES),
    'apply_mig_layout': (DEVICES, DEPLOYABLES),
    'start_driver_operation': (DEVICES, DEPLOYABLES),
    'create_attribute': (DEPLOYABLES,),
    'delete_attribute': (DEPLOYABLES,),
    'create_device_profile': (PROFILES,),
    'delete_device_profiles': (PROFILES,),
}

# Conductor RPC reads that may show the end of a change of a family made
# by the conductor's own work (an operation that succeeded has programmed
# its region, a binding that ended may have): when one shows such an end
# newer than the copy, the families are served as after a write of this
# process, so what the caller reads next is never older than what it saw.
_OPERATION_ENDED = ((DEVICES, DEPLOYABLES), states.OPERATION.terminal)
_BINDING_ENDED = ((DEPLOYABLES,), (states.BOUND, states.BIND_FAILED))
ENDED_BY = {'get_operation': _OPERATION_ENDED,
            'list_operations': _OPERATION_ENDED,
            'get_arq': _BINDING_ENDED,
            'list_arqs': _BINDING_ENDED}
# Seconds an end's updated_at (whole seconds, the conductor's clock) is
# taken to be later than it says, against the wall clock of this process
# when its copy was asked for (clocks in sync, as deadlines need).
CLOCK_MARGIN = 2.0

# Conductor calls that change nothing (the others may change ARQs).
_READS = ('list_', 'get_', 'can_', 'read_model_snapshot')

_MODELS = weakref.WeakSet()

# How long a read after this process's own write of its family waits for
# the copy to catch up (a snapshot asked for after the write) before it
# goes to the conductor instead.
WRITE_WAIT = 0.05


class _Unanswerable(Exception):
    """The copy cannot answer this query exactly as the database would."""


class Family:
    """One family's rows at one generation, in the database's default list
    order (created_at, id)."""

    def __init__(self, generation, rows, dialect):
        self.generation = generation
        self.rows = rows
        self.by_uuid = {row['uuid']: index for index, row in enumerate(rows)}
        # MariaDB/MySQL compare strings by a collation, usually ignoring
        # case and trailing spaces: only values plain enough that every
        # collation agrees are compared here.
        self._collated = dialect == 'mysql'

    def get(self, uuid):
        index = self.by_uuid.get(uuid)
        return None if index is None else self.rows[index]

    def find(self, key, value):
        """The one row whose ``key`` is exactly ``value`` (a unique
        column), or None."""
        for row in self.rows:
            if row[key] == value:
                return row
        return None

    def equal(self, stored, wanted):
        if stored is None:
            return False        # NULL = x is never true
        if not self._collated:
            return stored == wanted
        if not (_plain(stored) and _plain(wanted)):
            raise _Unanswerable()
        same = stored.lower() == wanted.lower()
        if same and stored != wanted:
            raise _Unanswerable()   # depends on the column's collation
        return same

    def page(self, match, limit, marker, sort_key, sort_dir):
        """As db/api.py paginate: rows after the marker (looked up among
        all rows) in (sort_key, id) order, that ``match``, at most
        ``limit``."""
        if sort_key != 'created_at':
            raise _Unanswerable()
        # Positions, not slices: a page costs the rows it looks at, not a
        # copy of the family.
        if marker is None:
            start = 0 if sort_dir == 'asc' else len(self.rows) - 1
        else:
            start = self.by_uuid.get(marker)
            if start is None:
                raise _Unanswerable()   # the conductor says 400 (or knows)
            start += 1 if sort_dir == 'asc' else -1
        positions = range(start, len(self.rows)) if sort_dir == 'asc' \
            else range(start, -1, -1)
        found = []
        for position in positions:
            row = self.rows[position]
            if match(row):
                found.append(row)
                if len(found) >= limit:
                    break
        return found


def _plain(value):
    return isinstance(value, str) and value.isascii() and \
        not value.endswith(' ')


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
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._pid = None
        self._server = None
        self._thread = None
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
                        self._families[name] = Family(generation, [], None)
                        self._heard[name] = time.monotonic()
                    continue
                if family is None or generation > family.generation:
                    if generation > self._announced.get(name, (-1, 0))[0]:
                        self._announced[name] = (generation,
                                                 time.monotonic())
                    newer = True
        if newer:
            self._wake.set()

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
            self._stopping.clear()
            self._thread = threading.Thread(
                target=self._run, daemon=True, name='read-model')
            self._thread.start()

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
        self._stopping.set()
        self._wake.set()
        # The thread first: it is what starts the listener, and one
        # started after a look at ``_server`` here would be left polling
        # a transport that is going away (for ever, if its vhost is).
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
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
        while not self._stopping.is_set():
            started = time.monotonic()
            # Cleared before the snapshot is asked for: an announcement
            # from now on is in it or wakes the next one.
            self._wake.clear()
            fetched = self.refresh()
            if self._stopping.is_set():
                return
            # A refresh that read whole families costs the conductor too:
            # the next waits at least twice as long as this one took.
            if fetched:
                self._stopping.wait(2 * (time.monotonic() - started))
            self._wake.wait(self.check_interval)

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
                built[name] = Family(generations[name], rows['deployables'],
                                     dialect)
                built['attributes'] = Family(generations[name],
                                             rows['attributes'], dialect)
            else:
                built[name] = Family(generations[name], rows, dialect)
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
                    self._wake.set()
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
                self._families[name] = Family(generations[name], [], None)

    def wait_current(self, timeout):
        """Wait until every family's copy is current (tests, and the
        bench); False if not within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.family(name) is not None
                   for name in contract.FAMILIES):
                return True
            self._wake.set()
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
            self._wake.set()
        return not behind

    def _wrote(self, families):
        with self._lock:
            seq = self._last_write = next(self._write_seq)
            for name in families:
                self._writes[name] = seq
        self._wake.set()


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


def _served(context, name, family):
    context.read_generation = '%s:%d' % (name, family.generation)


class ModelledConductorAPI:
    """The conductor client, with the read methods served from the copies
    when they can be."""

    def __init__(self, conductor_api, model, arqs):
        self._api = conductor_api
        self.model = model
        self.arqs = arqs

    def __getattr__(self, name):
        method = getattr(self._api, name)
        if name in ENDED_BY:
            return self._showing_ends(method, *ENDED_BY[name])
        if name.startswith(_READS):
            return method
        families = WRITES.get(name)

        def write(*args, **kwargs):
            # Any call but a read may change an ARQ: answers kept from
            # before it are not given after it.
            with self.arqs.writing():
                if families is None:
                    return method(*args, **kwargs)
                with self.model.writing(families):
                    return method(*args, **kwargs)
        return write

    def get_arq(self, context, uuid):
        return self.arqs.get(context, uuid, lambda: self._conductors(
            'get_arq')(context, uuid))

    def list_arqs(self, context, filters, limit, marker, sort_key,
                  sort_dir):
        query = [filters, limit, marker, sort_key, sort_dir]
        return self.arqs.list(context, query, lambda: self._conductors(
            'list_arqs')(context, filters, limit, marker, sort_key,
                         sort_dir))

    def _conductors(self, name):
        """The conductor's read ``name``, noting the ends it shows."""
        return self._showing_ends(getattr(self._api, name), *ENDED_BY[name])

    def _showing_ends(self, method, families, ended):
        def read(*args, **kwargs):
            found = method(*args, **kwargs)
            shown = found if isinstance(found, list) else [found]
            if any(isinstance(item, dict) and item.get('state') in ended
                   and self.model.newer_than_copy(item.get('updated_at'))
                   for item in shown):
                with self.model.writing(families):
                    pass
            return found
        return read

    def _page(self, context, name, match, limit, marker, sort_key,
              sort_dir, attributes=False):
        family = self.model.family(name, attributes=attributes)
        if family is None:
            return None
        try:
            found = family.page(lambda row: match(family, row), limit,
                                marker, sort_key, sort_dir)
        except _Unanswerable:
            return None
        _served(context, 'attributes' if attributes else name, family)
        return found

    def _one(self, context, name, uuid, attributes=False):
        family = self.model.family(name, attributes=attributes)
        row = family.get(uuid) if family is not None else None
        if row is not None:
            _served(context, 'attributes' if attributes else name, family)
        return row

    def list_devices(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        found = self._page(context, DEVICES, _matching(filters), limit,
                           marker, sort_key, sort_dir)
        if found is None:
            return self._api.list_devices(context, filters, limit, marker,
                                          sort_key, sort_dir)
        return found

    def get_device(self, context, uuid):
        return self._one(context, DEVICES, uuid) or \
            self._api.get_device(context, uuid)

    def list_deployables(self, context, filters, limit, marker, sort_key,
                         sort_dir):
        found = self._page(context, DEPLOYABLES, _matching(filters), limit,
                           marker, sort_key, sort_dir)
        if found is None:
            return self._api.list_deployables(context, filters, limit,
                                              marker, sort_key, sort_dir)
        return found

    def get_deployable(self, context, uuid):
        return self._one(context, DEPLOYABLES, uuid) or \
            self._api.get_deployable(context, uuid)

    def list_attributes(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        # As db/attributes.py: deployable_id when given, key when not empty.
        def match(family, row):
            wanted = filters.get('deployable_id')
            if wanted is not None and row['deployable_id'] != wanted:
                return False
            return not filters.get('key') or family.equal(row['key'],
                                                          filters['key'])
        found = self._page(context, DEPLOYABLES, match, limit, marker,
                           sort_key, sort_dir, attributes=True)
        if found is None:
            return self._api.list_attributes(context, filters, limit,
                                             marker, sort_key, sort_dir)
        return found

    def get_attribute(self, context, uuid):
        return self._one(context, DEPLOYABLES, uuid, attributes=True) or \
            self._api.get_attribute(context, uuid)

    def list_device_profiles(self, context, names, limit, marker, sort_key,
                             sort_dir):
        def match(family, row):
            return not names or any(family.equal(row['name'], name)
                                    for name in names)
        found = self._page(context, PROFILES, match, limit, marker,
                           sort_key, sort_dir)
        if found is None:
            return self._api.list_device_profiles(context, names, limit,
                                                  marker, sort_key, sort_dir)
        return found

    def get_device_profile(self, context, uuid=None, name=None):
        family = self.model.family(PROFILES)
        row = None
        if family is not None:
            # An exact hit is the row any collation finds (unique column).
            row = family.get(uuid) if uuid is not None else \
                family.find('name', name)
        if row is None:
            return self._api.get_device_profile(context, uuid=uuid,
                                                name=name)
        _served(context, PROFILES, family)
        return row


def _matching(filters):
    """Equality on each filter given (not None), as db/devices.py and
    db/deployables.py filter."""
    given = [(k, v) for k, v in filters.items() if v is not None]

    def match(family, row):
        return all(family.equal(row[k], v) for k, v in given)
    return match


def wrap(conductor_api, conf):
    """The client the API's handlers use: the read model in front of the
    conductor when ``[api] read_model`` is on and the conductors speak
    RPC 1.17; ARQ answers kept when they speak 1.20."""
    can_serve = getattr(conductor_api, 'can_serve_read_model', None)
    if not conf.api.read_model or can_serve is None or can_serve() is not True:
        return conductor_api
    model = ReadModel(conductor_api, conf.api.read_model_check_interval)
    can_keep = getattr(conductor_api, 'can_keep_arq_answers', None)
    kept = conf.api.read_model_arq_answers if can_keep is not None and \
        can_keep() is True else 0
    return ModelledConductorAPI(conductor_api, model,
                                arq_cache.ArqCache(model, kept))


# The reads the copies answer whose ETag is known before the handler runs:
# path -> (family, its attributes' copy, the handler's policy rule, and
# whether the rule is checked with the cloud scope, as the handler does).
_KNOWN_AHEAD = [(re.compile(pattern), family, attributes, rule, cloud)
                for pattern, family, attributes, rule, cloud in (
    (r'/v2/devices/?\Z', DEVICES, False, 'cyborg:device:get_all', True),
    (r'/v2/devices/[^/]+/?\Z', DEVICES, False, 'cyborg:device:get_one',
     True),
    (r'/v2/deployables/?\Z', DEPLOYABLES, False,
     'cyborg:deployable:get_all', True),
    (r'/v2/deployables/[^/]+/?\Z', DEPLOYABLES, False,
     'cyborg:deployable:get_one', True),
    (r'/v2/attributes/?\Z', DEPLOYABLES, True, 'cyborg:attribute:get_all',
     True),
    (r'/v2/attributes/[^/]+/?\Z', DEPLOYABLES, True,
     'cyborg:attribute:get_one', True),
    (r'/v2/device_profiles/?\Z', PROFILES, False,
     'cyborg:device_profile:get_all', False),
    (r'/v2/device_profiles/[^/]+/?\Z', PROFILES, False,
     'cyborg:device_profile:get_one', False))]


class ETagHook(hooks.PecanHook):
    """An ETag on every answer the read model gave (from the generation it
    was read at and what shapes the body: path and query, microversion,
    public URL); If-None-Match with it answers 304 without a body.

    The answer is a function of those alone, so a conditional GET whose
    ETag is the one the current copy would give is answered 304 before the
    handler runs (after the handler's policy check): no query, view or
    JSON is made for it."""

    def before(self, state):
        request = state.request
        if request.method != 'GET' or \
                'HTTP_IF_NONE_MATCH' not in request.environ:
            return
        known = next((k for k in _KNOWN_AHEAD if k[0].match(request.path)),
                     None)
        model = getattr(getattr(request, 'conductor_api', None), 'model',
                        None)
        if known is None or not isinstance(model, ReadModel):
            return
        _pattern, name, attributes, rule, cloud = known
        family = model.family(name, attributes=attributes)
        if family is None:
            return
        policy.authorize(rule, request.context, policy.CLOUD if cloud
                         else None)
        etag = _etag(request, '%s:%d' % ('attributes' if attributes
                                          else name, family.generation))
        if etag in request.if_none_match:
            raise webob.exc.HTTPNotModified(headers={'ETag': '"%s"' % etag})

    def after(self, state):
        request, response = state.request, state.response
        served = getattr(getattr(request, 'context', None),
                         'read_generation', None)
        if served is None or request.method != 'GET' or \
                response.status_int != 200:
            return
        etag = _etag(request, served)
        response.headers['ETag'] = '"%s"' % etag
        if etag in request.if_none_match:
            response.status = 304
            response.body = b''
            response.content_type = None


def _etag(request, served):
    shape = '%s|%s|%s|%s' % (
        served, getattr(request, 'version', ''),
        hooks_lib.public_url(request), request.path_qs)
    return hashlib.sha1(shape.encode()).hexdigest()[:32]
