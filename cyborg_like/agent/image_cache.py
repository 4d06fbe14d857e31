"""The agent's cache of catalog images, bounded, least recently used out.

A job naming a catalog image carries its uuid, sha256, size and a URL
(conductor/images.py). The image is fetched into ``[agent]
image_cache_dir`` as ``<uuid>`` with ``<uuid>.sha256`` beside it (the
digest file the FPGA drivers check again), its sha256 verified before it
is used; a later job finds it there and fetches nothing. Every use verifies
the digest again, so a file damaged on disk is fetched anew, never
programmed. When the files exceed ``[agent] image_cache_size`` MiB, the
least recently used go (the one in use stays).
"""

import hashlib
import os
import re
import threading

from oslo_log import log as logging

from cyborg_like.common import exception

LOG = logging.getLogger(__name__)

CHUNK_SIZE = 64 * 1024
_UUID = re.compile(r'^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\Z')


class ImageCache:

    def __init__(self, directory, max_bytes, fetch):
        """``fetch(url)``: an iterator of the chunks at ``url``."""
        self.directory = directory
        self.max_bytes = max_bytes
        self._fetch = fetch
        self._lock = threading.Lock()
        #: How many times an image was downloaded (for the tests' eyes
        #: and the logs).
        self.downloads = 0

    def path_for(self, image):
        """A local file holding ``image``, verified; fetched if needed."""
        if not _UUID.match(image.get('uuid') or ''):
            raise exception.Invalid('Invalid image id %r.'
                                    % image.get('uuid'))
        path = os.path.join(self.directory, image['uuid'])
        with self._lock:
            os.makedirs(self.directory, mode=0o750, exist_ok=True)
            if os.path.isfile(path):
                if _sha256_of(path) == image['sha256']:
                    os.utime(path)      # most recently used
                    return path
                LOG.warning('Cached image %s does not match its sha256; '
                            'fetching it again', image['uuid'])
                _remove(path)
            self._download(image, path)
            self._evict(keep=path)
            return path

    def _download(self, image, path):
        partial = path + '.part'
        digest = hashlib.sha256()
        size = 0
        try:
            with open(partial, 'wb') as f:
                for chunk in self._fetch(image['url']):
                    size += len(chunk)
                    if image.get('size') is not None and \
                            size > image['size']:
                        raise self._refused(image, 'more than %d bytes'
                                            % image['size'])
                    digest.update(chunk)
                    f.write(chunk)
            self.downloads += 1
            if digest.hexdigest() != image['sha256']:
                raise self._refused(image, 'sha256 %s, not %s' % (
                    digest.hexdigest(), image['sha256']))
            with open(path + '.sha256', 'w') as f:
                f.write('%s  %s\n' % (image['sha256'], image['uuid']))
            os.rename(partial, path)
        except BaseException:
            _remove(partial)
            raise
        LOG.info('Fetched image %s (%d bytes) into the cache',
                 image['uuid'], size)

    @staticmethod
    def _refused(image, what):
        return exception.DriverError(
            driver='agent',
            reason='the download of image %s was refused: it has %s; '
                   'nothing was programmed' % (image['uuid'], what))

    def _evict(self, keep):
        entries = []
        for name in os.listdir(self.directory):
            path = os.path.join(self.directory, name)
            if _UUID.match(name) and path != keep:
                stat = os.stat(path)
                entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _m, size, _p in entries) + \
            os.stat(keep).st_size
        for _mtime, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            LOG.info('Evicting image %s from the cache',
                     os.path.basename(path))
            _remove(path)
            _remove(path + '.sha256')
            total -= size

    def cached(self):
        """Uuids of the images in the cache."""
        if not os.path.isdir(self.directory):
            return []
        return sorted(n for n in os.listdir(self.directory)
                      if _UUID.match(n))


def _sha256_of(path):
    with open(path, 'rb') as f:
        return hashlib.file_digest(f, 'sha256').hexdigest()


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def http_fetcher(conf):
    """Fetch with a keystoneauth session from the [catalog] options (no
    token when ``auth_type`` is unset, for a noauth API)."""
    from keystoneauth1 import exceptions as ks_exceptions
    from keystoneauth1 import loading as ks_loading
    from keystoneauth1 import session as ks_session

    auth = None
    if conf.catalog.auth_type:
        auth = ks_loading.load_auth_from_conf_options(conf, 'catalog')
    session = ks_loading.load_session_from_conf_options(
        conf, 'catalog', auth=auth) if auth else ks_session.Session(
        timeout=conf.catalog.timeout)

    def fetch(url):
        try:
            response = session.get(url, stream=True, raise_exc=False,
                                   authenticated=auth is not None)
        except ks_exceptions.ClientException as error:
            # Unreachable, timed out, no token: the reason, not a trace.
            raise exception.DriverError(
                driver='agent', reason='could not fetch %s: %s' % (
                    url, error))
        if response.status_code != 200:
            raise exception.DriverError(
                driver='agent', reason='fetching %s answered %d: %s' % (
                    url, response.status_code, response.text[:200]))
        try:
            yield from response.iter_content(CHUNK_SIZE)
        finally:
            response.close()
    return fetch
