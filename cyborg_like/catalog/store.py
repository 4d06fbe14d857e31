"""Where image data lives: the Store interface and the ``file`` store.

A store keeps opaque blobs. Its callers give it a stream and get back a
*location* (a string only the store interprets, recorded by the conductor
beside the image's metadata); they read and delete by location. Stores are
loaded by name from the entry-point group ``cyborg_like.catalog.store``
(``[catalog] store``): ``file`` here, ``glance`` in glance_store.py.

Which processes use a store: the API (upload: ``put``; download: ``open``;
delete and failed uploads: ``delete``) and the conductor
(``download_url``, to tell agents where to fetch from). A store never sees
the database.
"""

import abc
import os
import threading
import uuid as uuid_lib

import stevedore

from cyborg_like.common import exception

GROUP = 'cyborg_like.catalog.store'
CHUNK_SIZE = 64 * 1024


class Store(abc.ABC):
    """One place to keep image data."""

    #: The name under which the entry point registers the class.
    name = None

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def put(self, image_uuid, chunks, metadata):
        """Store the bytes of ``chunks`` (an iterable of ``bytes``) for
        image ``image_uuid``; return the location.

        ``metadata``: the image's metadata as known when the upload starts
        (name, kind, vendor, board, interface_id, function_name, ...), for
        stores that keep it beside the data. When iterating ``chunks``
        raises (the client went away, too big, a digest mismatch found by
        the caller), the store removes whatever it wrote and lets the error
        through: a failed ``put`` leaves nothing behind. Each call returns
        a new location, so a retried upload never overwrites the data of
        an earlier one that is still being read.
        """

    @abc.abstractmethod
    def open(self, location):
        """An iterator of ``bytes`` chunks of the data at ``location``;
        ``exception.ImageDataNotFound`` when there is none."""

    @abc.abstractmethod
    def delete(self, location):
        """Remove the data at ``location``; nothing there is not an
        error (deletes are retried after partial failures)."""

    def download_url(self, location):
        """A URL agents can fetch the data from directly, or None: then
        agents fetch it through the catalog API
        (``GET /v2/bitstreams/{uuid}/data``)."""
        return None


class FileStore(Store):
    """A directory (``[catalog] file_store_dir``). With several API
    processes on different hosts, every one of them must see the same
    directory (a shared filesystem); conductors and agents do not need
    it."""

    name = 'file'

    @property
    def root(self):
        # Read each time: the option may change while the process runs
        # (tests), and the store object is kept.
        return os.path.abspath(self.conf.catalog.file_store_dir)

    def put(self, image_uuid, chunks, metadata):
        os.makedirs(self.root, mode=0o750, exist_ok=True)
        location = '%s.%s' % (uuid_lib.UUID(str(image_uuid)),
                              uuid_lib.uuid4().hex[:12])
        final = self._path(location)
        partial = final + '.part'
        try:
            with open(partial, 'wb') as f:
                for chunk in chunks:
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            # The name appears only once the data is whole.
            os.rename(partial, final)
        except BaseException:
            _remove(partial)
            raise
        return location

    def open(self, location):
        path = self._path(location)
        try:
            f = open(path, 'rb')
        except FileNotFoundError:
            raise exception.ImageDataNotFound(location=location)
        return _read_chunks(f)

    def delete(self, location):
        _remove(self._path(location))

    def _path(self, location):
        # Locations are names this store made; never a path elsewhere.
        if not location or os.sep in location or location.startswith('.'):
            raise exception.ImageDataNotFound(location=location)
        return os.path.join(self.root, location)


def _read_chunks(f):
    with f:
        while True:
            chunk = f.read(CHUNK_SIZE)
            if not chunk:
                return
            yield chunk


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class Stores:
    """The stores of one configuration, each loaded once, by name (an
    image names the store it was put in, which may no longer be the
    configured one)."""

    def __init__(self, conf):
        self.conf = conf
        self._loaded = {}
        self._lock = threading.Lock()

    def get(self, name=None):
        name = name or self.conf.catalog.store
        with self._lock:
            if name not in self._loaded:
                self._loaded[name] = load(self.conf, name)
            return self._loaded[name]


def load(conf, name=None):
    """The store named ``name`` (default ``[catalog] store``)."""
    name = name or conf.catalog.store
    try:
        manager = stevedore.DriverManager(
            GROUP, name, invoke_on_load=True, invoke_args=(conf,))
    except stevedore.exception.NoMatches:
        raise exception.Invalid('No image store named %r (entry points '
                                'of %s).' % (name, GROUP))
    return manager.driver
