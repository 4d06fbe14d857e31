"""/v2/bitstreams: the catalog of FPGA images (ours, beside Cyborg's API).

Metadata goes through the conductor; data is streamed between the client
and the store by this process (catalog/upload.py), never held whole.
"""

import re

import pecan
from pecan import rest
import webob

from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.schemas import bitstreams as schema
from cyborg_like.catalog import upload
from cyborg_like.common import exception
from cyborg_like.common import listing as fields

RESOURCE = 'bitstreams'
# app.STREAM_LENGTH (the app module imports the controllers).
STREAM_LENGTH = 'cyborg_like.stream_length'
_FIELDS = ('uuid', 'name', 'description', 'kind', 'vendor', 'board',
           'interface_id', 'hardware_id', 'function_name',
           'function_version', 'status', 'status_reason', 'size', 'sha256',
           'project_id', 'created_at', 'updated_at')
_SHA256 = re.compile(r'^[0-9a-f]{64}\Z')


def _view(image):
    shown = {k: image[k] for k in _FIELDS}
    shown['links'] = listing.self_link(RESOURCE, image['uuid'])
    return shown


class BitstreamsController(rest.RestController):
    _custom_actions = {'data': ['GET', 'PUT']}

    def _handle_put(self, method, remainder, request=None):
        # pecan takes the first segment of a PUT for the action's name;
        # PUT is only ever /bitstreams/<uuid>/data here.
        if len(remainder) == 2 and remainder[1] == 'data':
            return self._find_controller('put_data'), remainder[:1]
        pecan.abort(405)

    @pecan.expose('json')
    def post(self):
        context = pecan.request.context
        policy.authorize('cyborg:bitstream:create', context, policy.CLOUD)
        values = validation.body(pecan.request, schema.CREATE)
        image = pecan.request.conductor_api.create_bitstream(context, values)
        pecan.response.status = 201
        view = _view(image)
        pecan.response.headers['Location'] = view['links'][0]['href']
        return view

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:bitstream:get_all', pecan.request.context,
                         policy.CLOUD)
        query = listing.ListQuery(params, fields.BITSTREAM_FILTERS,
                                  fields.BITSTREAM_SORT_KEYS,
                                  schema.LIST_FILTER_SCHEMAS)
        images = pecan.request.conductor_api.list_bitstreams(
            pecan.request.context, **query.as_kwargs())
        return query.page(RESOURCE, images, _view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:bitstream:get_one', pecan.request.context,
                         policy.CLOUD)
        return _view(pecan.request.conductor_api.get_bitstream(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def delete(self, uuid):
        context = pecan.request.context
        policy.authorize('cyborg:bitstream:delete', context, policy.CLOUD)
        found = pecan.request.conductor_api.delete_bitstream(context, uuid)
        if found['location']:
            pecan.request.stores.get(found['store']).delete(
                found['location'])
        pecan.response.status = 204

    @pecan.expose('json')
    def put_data(self, uuid):
        """Stream the request body into the store (never whole in memory);
        200 and the image once the conductor recorded it."""
        context = pecan.request.context
        policy.authorize('cyborg:bitstream:upload', context, policy.CLOUD)
        request = pecan.request
        limit = request.conf.catalog.max_image_size
        length = request.content_length
        if length is not None and length > limit:
            raise exception.ImageTooLarge(limit=limit)
        if length == 0:
            raise exception.Invalid('The image data is empty.')
        stream = upload.CountingStream(request.body_file, length, limit)
        image = upload.receive(request.conductor_api, context,
                               request.stores.get(),
                               uuid, stream, _client_sha256(request))
        return _view(image)

    # Served whatever the client accepts (the data, or a JSON error): an
    # Accept of JSON alone must not be a 406 before policy is checked.
    @pecan.expose('json')
    @pecan.expose(content_type='application/octet-stream')
    def get_data(self, uuid):
        context = pecan.request.context
        policy.authorize('cyborg:bitstream:download', context, policy.CLOUD)
        image = pecan.request.conductor_api.get_bitstream(context, uuid)
        if image['status'] != 'active':
            raise exception.BitstreamBadState(
                uuid=uuid, status=image['status'], expected='active')
        chunks = pecan.request.stores.get(image['store']).open(
            image['location'])
        response = webob.Response(
            app_iter=chunks, content_type='application/octet-stream',
            content_length=image['size'], charset=None)
        response.headers[schema.SHA256_HEADER] = image['sha256']
        pecan.request.environ[STREAM_LENGTH] = image['size']
        return response


def _client_sha256(request):
    value = request.headers.get(schema.SHA256_HEADER)
    if value is None:
        return None
    value = value.strip().lower()
    if not _SHA256.match(value):
        raise exception.Invalid('%s must be 64 hexadecimal digits, not %s.'
                                % (schema.SHA256_HEADER,
                                   validation.excerpt(value)))
    return value
