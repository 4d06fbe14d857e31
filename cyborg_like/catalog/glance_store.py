"""The ``glance`` store: image data kept in OpenStack Glance.

Each catalog image is one Glance image, created with the catalog image's
uuid as its Glance id when that id is free, so the id that names a
bitstream in the catalog (``accel:bitstream_id``) is also its Glance image
id, as with Cyborg. The catalog metadata goes into image properties: under
the names of Cyborg's bitstream metadata convention where one exists
(``bs-name``, ``bs-uuid``, ``vendor``, ``board``, ``shell_id``,
``version``) and as ``accel_<key>`` for every key, so other tools can find
images by them.

Plain REST on a keystoneauth session ([glance] options, service type
``image``): create, then ``PUT .../file`` with the bytes streamed as they
come (chunked), then ``GET .../file`` streamed back. Glance computes its own
checksums; the catalog keeps its sha256. The location is the Glance id.
Agents do not get a Glance URL (``download_url`` is None): they would need
Glance credentials; they fetch through the catalog API instead.
"""

import time
import uuid as uuid_lib

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from cyborg_like.catalog import store
from cyborg_like.common import exception

GROUP = 'glance'
# Catalog metadata key -> property name of Cyborg's bitstream metadata
# convention (its "FPGA Bitstream metadata spec").
CYBORG_PROPERTIES = {'function_name': 'bs-name', 'hardware_id': 'bs-uuid',
                     'vendor': 'vendor', 'board': 'board',
                     'interface_id': 'shell_id',
                     'function_version': 'version'}
PREFIX = 'accel_'
# Glance limits property values to 255 characters.
MAX_VALUE = 255
# Removing the image of an interrupted upload: Glance is still unwinding
# its side of that upload (restoring the image's status) when our DELETE
# arrives and may answer 5xx until it has; so the removal is tried again,
# a bounded number of times, with these pauses in between (seconds).
CLEANUP_PAUSES = (0.2, 0.5, 1.0, 2.0, 4.0)

LOG = logging.getLogger(__name__)


class GlanceError(exception.ServiceUnavailable):
    msg_fmt = 'Glance: %(reason)s'
    error_code = 'accel.bitstream.store_unavailable'


class GlanceStore(store.Store):
    name = 'glance'

    def __init__(self, conf):
        super().__init__(conf)
        self._adapter = None

    @property
    def adapter(self):
        if self._adapter is None:
            auth = ks_loading.load_auth_from_conf_options(self.conf, GROUP)
            session = ks_loading.load_session_from_conf_options(
                self.conf, GROUP, auth=auth)
            self._adapter = ks_loading.load_adapter_from_conf_options(
                self.conf, GROUP, session=session, auth=auth)
        return self._adapter

    # -- the Store interface -----------------------------------------------

    def put(self, image_uuid, chunks, metadata):
        image_id = self._create(image_uuid, metadata)
        try:
            response = self._request(
                'PUT', '/v2/images/%s/file' % image_id, data=iter(chunks),
                headers={'Content-Type': 'application/octet-stream'})
            self._expect(response, (204,), 'upload of %s' % image_id)
        except BaseException:
            # Whatever failed (the client, Glance, a refusal by the
            # caller while reading chunks), no half image stays behind,
            # and the caller sees that first error, not the clean-up's.
            self._remove_partial(image_id)
            raise
        return image_id

    def open(self, location):
        image_id = self._image_id(location)
        response = self._request('GET', '/v2/images/%s/file' % image_id,
                                 stream=True)
        if response.status_code in (204, 404):
            # 204: the image exists but has no data (upload never ended).
            response.close()
            raise exception.ImageDataNotFound(location=location)
        self._expect(response, (200,), 'download of %s' % image_id)
        return _chunks(response)

    def delete(self, location):
        image_id = self._image_id(location)
        response = self._request('DELETE', '/v2/images/%s' % image_id)
        self._expect(response, (204, 404), 'delete of %s' % image_id)

    # -- helpers -----------------------------------------------------------

    def _remove_partial(self, image_id):
        for pause in CLEANUP_PAUSES + (None,):
            try:
                self.delete(image_id)
                return
            except GlanceError as error:
                if pause is None:
                    LOG.error('Glance image %s of a failed upload could '
                              'not be removed: %s', image_id, error)
                    return
                time.sleep(pause)

    def _create(self, image_uuid, metadata):
        body = image_body(image_uuid, metadata, self.conf.glance)
        response = self._request('POST', '/v2/images', json=body)
        if response.status_code == 409:
            # The id is taken (an earlier upload of the same catalog image
            # still exists, or was deleted: Glance never reuses ids). Each
            # put makes new data, so let Glance choose the id.
            del body['id']
            response = self._request('POST', '/v2/images', json=body)
        self._expect(response, (201,), 'create')
        return response.json()['id']

    def _request(self, method, url, **kwargs):
        try:
            return self.adapter.request(url, method, raise_exc=False,
                                        **kwargs)
        except ks_exc.ClientException as error:
            raise GlanceError(reason='%s %s: %s' % (method, url, error))

    @staticmethod
    def _expect(response, statuses, what):
        if response.status_code not in statuses:
            text = response.text[:300]
            response.close()
            raise GlanceError(reason='%s answered %s: %s' % (
                what, response.status_code, text))

    @staticmethod
    def _image_id(location):
        try:
            return str(uuid_lib.UUID(location))
        except (TypeError, ValueError, AttributeError):
            raise exception.ImageDataNotFound(location=location)


def image_body(image_uuid, metadata, options):
    """The JSON of ``POST /v2/images`` for a catalog image."""
    body = {'id': str(uuid_lib.UUID(str(image_uuid))),
            'name': str(metadata.get('name') or 'accel-image-%s' % image_uuid),
            'disk_format': options.disk_format, 'container_format': 'bare',
            'visibility': options.visibility,
            PREFIX + 'catalog_uuid': str(image_uuid)}
    for key, value in sorted(metadata.items()):
        if value is None or isinstance(value, (dict, list)):
            continue
        text = str(value)[:MAX_VALUE]
        body[PREFIX + key] = text
        if key in CYBORG_PROPERTIES:
            body[CYBORG_PROPERTIES[key]] = text
    return body


def _chunks(response):
    with response:
        yield from response.iter_content(store.CHUNK_SIZE)
