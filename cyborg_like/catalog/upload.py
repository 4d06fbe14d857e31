"""An upload, as the API process carries it out.

The request body is read in chunks and handed straight to the store; its
size and sha256 are counted on the way, so no image is ever held whole in
memory. The first chunk(s), up to ``formats.HEAD_SIZE``, are inspected
before anything is stored: a header contradicting the image's record stops
the upload at once. Then one call tells the conductor what was stored
(docs/catalog.md, "How data flows")::

    API                                conductor (database)
    begin_bitstream_upload  ------->   queued/failed/uploading -> uploading
    read head, formats.inspect         (upload id U)
    store.put(stream) -> location
    finish_bitstream_upload(U, size, sha256, location, declared)
                            ------->   uploading(U) -> active
"""

import hashlib

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.catalog import formats
from cyborg_like.catalog import metadata
from cyborg_like.common import exception

LOG = logging.getLogger(__name__)

CHUNK_SIZE = 64 * 1024


class CountingStream:
    """Chunks of a request body, counted, hashed and bounded as read."""

    def __init__(self, body_file, content_length, limit):
        self._file = body_file
        self._expected = content_length
        self._limit = limit
        self._pending = []
        self.size = 0
        self._sha256 = hashlib.sha256()

    def head(self, wanted):
        """The first ``wanted`` bytes (fewer for a shorter body), kept to
        be streamed again."""
        parts, got = [], 0
        while got < wanted:
            chunk = self._read(min(CHUNK_SIZE, wanted - got))
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        self._pending = parts
        return b''.join(parts)

    def chunks(self):
        while self._pending:
            yield self._pending.pop(0)
        while True:
            chunk = self._read(CHUNK_SIZE)
            if not chunk:
                break
            yield chunk
        if self._expected is not None and self.size != self._expected:
            raise exception.Invalid(
                'The request body ended after %d of the %d bytes its '
                'Content-Length announced.' % (self.size, self._expected))

    @property
    def sha256(self):
        return self._sha256.hexdigest()

    def _read(self, n):
        chunk = self._file.read(n)
        if chunk:
            self.size += len(chunk)
            if self.size > self._limit:
                raise exception.ImageTooLarge(limit=self._limit)
            self._sha256.update(chunk)
        return chunk


def receive(conductor_api, context, store, uuid, stream, client_sha256):
    """Store the image data of ``stream`` (a CountingStream) for image
    ``uuid``; returns the image as the conductor recorded it."""
    started = conductor_api.begin_bitstream_upload(context, uuid)
    image, upload_id = started['bitstream'], started['upload_id']
    try:
        _check_announced(image, client_sha256)
        declared = formats.inspect(stream.head(formats.HEAD_SIZE)) or {}
        merged = metadata.merge(image, declared)
        location = store.put(uuid, stream.chunks(), dict(
            merged, name=image['name'], uuid=uuid))
    except Exception as error:
        _fail(conductor_api, context, uuid, upload_id, error)
        raise
    try:
        if stream.size == 0:
            raise exception.Invalid('The image data is empty.')
        if client_sha256 and client_sha256 != stream.sha256:
            raise exception.ImageDigestMismatch(expected=client_sha256,
                                                actual=stream.sha256)
        return conductor_api.finish_bitstream_upload(
            context, uuid, upload_id, stream.size, stream.sha256,
            store.name, location, declared)
    except exception.CyborgLikeException as error:
        # A definite refusal (digest, header, superseded, deleted): the
        # data is nobody's. After a time-out the conductor may have
        # recorded it: it stays (see docs/catalog.md).
        store.delete(location)
        _fail(conductor_api, context, uuid, upload_id, error)
        raise


def _check_announced(image, client_sha256):
    expected = image.get('expected_sha256')
    if client_sha256 and expected and client_sha256 != expected:
        raise exception.ImageDigestMismatch(
            'The upload announces sha256 %s, but the image was created '
            'with sha256 %s.' % (client_sha256, expected))


def _fail(conductor_api, context, uuid, upload_id, error):
    """Best effort: the image shows why its upload failed. When the
    conductor cannot be reached it stays 'uploading' until an upload is
    retried (which supersedes this one)."""
    reason = getattr(error, 'message', None) or \
        'The upload was interrupted (%s).' % type(error).__name__
    try:
        conductor_api.fail_bitstream_upload(context, uuid, upload_id,
                                            reason)
    except (exception.CyborgLikeException, messaging.MessagingException):
        LOG.warning('Could not record the failed upload of image %s',
                    uuid)
