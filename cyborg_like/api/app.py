"""The WSGI application of the API: pecan plus its middleware."""

import json
import re
import urllib.parse

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import request_id
from oslo_middleware import sizelimit
import pecan
import webob.dec
import webob.exc

from cyborg_like.api import access_log
from cyborg_like.api import audit
from cyborg_like.api import errors
from cyborg_like.api import hooks
from cyborg_like.api import metrics
from cyborg_like.api import pecan_argspec  # noqa: F401 (installs a cache)
from cyborg_like.api import policy_checks  # noqa: F401 (installs a cache)
from cyborg_like.api import read_model
from cyborg_like.api import validation
from cyborg_like.api.controllers import root
from cyborg_like.catalog import store as store_lib
from cyborg_like.conductor import rpcapi

LOG = logging.getLogger(__name__)

# Version discovery and the API description are public, as in Cyborg:
# clients read them before they have a token. So are the API's metrics
# (api/metrics.py, answered before authentication): request counts and
# latency by route template and status, no project data.
PUBLIC_PATHS = ('/', '/openapi.yaml', '/openapi.json', '/metrics')


class PublicPaths:
    """Sends requests for PUBLIC_PATHS around authentication."""

    def __init__(self, authenticated, public):
        self.authenticated = authenticated
        self.public = public

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '') or '/'
        app = self.public if path in PUBLIC_PATHS else self.authenticated
        return app(environ, start_response)


# Bodies are JSON; a missing Content-Type is taken as JSON too, as curl
# without -H and older scripts send none (python-cyborgclient and
# openstacksdk always send application/json).
JSON_TYPES = ('application/json', '')
_BODY_METHODS = ('POST', 'PUT', 'PATCH', 'DELETE')


def _has_body(request):
    return bool(request.content_length) or bool(
        request.headers.get('Transfer-Encoding'))


class SaneRequests:
    """Refuses what the application must never parse: a body that is not
    JSON (415; a form or multipart body would be parsed by WebOb, and a
    multipart type without a boundary makes it fail), JSON nested too
    deep for the parser, not UTF-8 or holding values no database stores
    (400), a path or query string that is not UTF-8 or holds NUL (400),
    and a query parameter given twice (400). The
    body of a DELETE is dropped."""

    def __init__(self, application):
        self.application = application

    @webob.dec.wsgify
    def __call__(self, request):
        try:
            return self._checked(request)
        except webob.exc.HTTPException as error:
            # A refused body, or one the body limit cut while read.
            return errors.from_http_exception(error)

    def _checked(self, request):
        if not self._url_is_clean(request.environ):
            return errors.response(
                400, 'The URL is not valid UTF-8 once percent-decoded, or '
                     'holds a NUL character.')
        repeated = self._repeated_query_name(request)
        if repeated is not None:
            return errors.response(
                400, 'The query parameter %s is given more than once.'
                % validation.excerpt(repeated))
        if request.method == 'DELETE':
            # A DELETE's body has no meaning (RFC 9110) and Cyborg reads
            # none; pecan would pass its keys to the handler as arguments.
            request.body = b''
            request.content_type = None
        if not self._is_json(request):
            return errors.response(
                415, 'Request bodies must be JSON (Content-Type: '
                     'application/json).',
                code='accel.request.unsupported_media_type')
        if not request.content_type and _has_body(request):
            # Read as the JSON it is taken for, by pecan too (which would
            # parse a body without a type as a form).
            request.content_type = 'application/json'
        self._check_body(request)
        return request.get_response(self.application)

    @staticmethod
    def _url_is_clean(environ):
        """Path and query are UTF-8 without NUL, as every value is."""
        # PATH_INFO arrives percent-decoded, as latin-1 text by PEP 3333
        # (WebOb fails on anything else); the query string still
        # percent-encoded.
        path = environ.get('PATH_INFO', '')
        query = urllib.parse.unquote_to_bytes(
            environ.get('QUERY_STRING', ''))
        try:
            path.encode('latin-1').decode('utf-8')
            query.decode('utf-8')
        except UnicodeError:
            return False
        # PostgreSQL cannot compare a string holding NUL: a 500 otherwise.
        return '\x00' not in path and b'\x00' not in query

    @staticmethod
    def _repeated_query_name(request):
        """A query parameter named twice, or None. Every parameter of the
        API is one value; pecan would hand a handler a list of them."""
        seen = set()
        for name in request.GET.keys():
            if name in seen:
                return name
            seen.add(name)
        return None

    @staticmethod
    def _check_body(request):
        """Pecan parses a JSON body and passes its keys to the handler as
        arguments before the handler validates it: what it could choke on
        (deep nesting) or pass on (values no database stores) is a 400
        here."""
        if request.method not in _BODY_METHODS or not _has_body(request):
            return
        try:
            # JSON is UTF-8 (RFC 8259); pecan decodes the body with the
            # request's charset and logs a traceback when it cannot.
            text = request.body.decode(request.charset or 'utf-8')
        except (UnicodeDecodeError, LookupError):
            raise webob.exc.HTTPBadRequest(
                detail='The request body is not valid UTF-8 JSON.')
        try:
            document = json.loads(text)
        except RecursionError:
            raise webob.exc.HTTPBadRequest(
                detail='Invalid body: nested deeper than %d levels.'
                       % validation.MAX_DEPTH)
        except ValueError:
            return  # not JSON: the handler's validation says so
        validation.check_storable(document, 'body')

    @staticmethod
    def _is_json(request):
        if request.method not in _BODY_METHODS:
            return True
        content_type = request.content_type.lower()
        if content_type in JSON_TYPES or content_type.endswith('+json'):
            return True
        # A type no body would be parsed as (text/plain on a DELETE with
        # none) is harmless; a form type is parsed even when empty.
        form = content_type.startswith('multipart/') or (
            content_type == 'application/x-www-form-urlencoded')
        return not form and not _has_body(request)


# A client that writes its whole body before it reads the answer
# (Python's urllib, for one) gets a broken pipe instead of the 413 when
# the server closes the connection with the body unread: up to this much
# of a refused body is read and dropped first (as nginx's lingering
# close does); past it the connection is closed at once.
DISCARDED_BODY_MAX = 64 * 1024 * 1024
_DISCARD_CHUNK = 64 * 1024


def _discard(stream, length):
    while length > 0:
        chunk = stream.read(min(length, _DISCARD_CHUNK))
        if not chunk:
            return
        length -= len(chunk)


class BodySizeLimit(sizelimit.RequestBodySizeLimiter):
    """oslo.middleware's limit ([oslo_middleware] max_request_body_size),
    answered with our error body when Content-Length already tells."""

    @webob.dec.wsgify
    def __call__(self, request):
        limit = self._conf_get('max_request_body_size')
        if request.content_length and request.content_length > limit:
            if request.content_length <= DISCARDED_BODY_MAX:
                _discard(request.body_file_raw, request.content_length)
            return errors.response(
                413, 'The request body is larger than %d bytes.' % limit,
                code='accel.request.too_large')
        # A body of unknown length is cut by the library while read; the
        # error hook answers that 413.
        return request.get_response(super().__call__)


# Image data (PUT /v2/bitstreams/<uuid>/data, or without /v2) is streamed
# to the store by its handler, bounded by [catalog] max_image_size: it
# must not be read whole, nor refused, by the JSON body checks (nor by
# [oslo_middleware] max_request_body_size).
_STREAMED_PUT = re.compile(r'^(/v2)?/bitstreams/[^/]+/data/?\Z')


# Where a handler streaming a body of known length puts that length:
# pecan replaces a streamed response's body iterator (to see whether it
# is empty), which drops Content-Length; it is put back here.
STREAM_LENGTH = 'cyborg_like.stream_length'


class StreamedBodies:
    """Sends image uploads around the body checks (still through
    authentication and the handler's policy and limits), and gives
    streamed downloads their Content-Length."""

    def __init__(self, checked, streamed):
        self.checked = checked
        self.streamed = streamed

    def __call__(self, environ, start_response):
        def start(status, headers, exc_info=None):
            length = environ.get(STREAM_LENGTH)
            if length is not None and status.startswith('200') and not any(
                    name.lower() == 'content-length' for name, _v in headers):
                headers.append(('Content-Length', str(length)))
            return start_response(status, headers, exc_info)

        # Every method of the data path: the ones the path does not
        # declare are then 405 (the route table), not a 415 for a body
        # that is not JSON.
        if _STREAMED_PUT.match(environ.get('PATH_INFO', '')):
            if _is_form(environ.get('CONTENT_TYPE', '')):
                # WebOb would parse it (and fail on a multipart type
                # without a boundary); image data is never a form.
                return errors.response(
                    415, 'Image data is sent as the raw body (Content-Type: '
                         'application/octet-stream).',
                    code='accel.request.unsupported_media_type')(
                        environ, start)
            return self.streamed(environ, start)
        return self.checked(environ, start)


def _is_form(content_type):
    media = content_type.split(';')[0].strip().lower()
    return media.startswith('multipart/') or \
        media == 'application/x-www-form-urlencoded'


def setup_app(conf, conductor_api=None, metrics_sources=()):
    """Build the API; ``rpc.init`` must have been called already.
    ``metrics_sources`` add series to GET /metrics (api/metrics.py)."""
    conductor_api = read_model.wrap(conductor_api or rpcapi.ConductorAPI(
        timeout=conf.api.conductor_timeout, settle_writes=True,
        in_flight=metrics.RPC_CALLS_IN_FLIGHT), conf)
    app = pecan.make_app(
        root.RootController(),
        hooks=[hooks.ContextHook(conf.api.auth_strategy),
               hooks.ServiceHook(conductor_api, conf,
                                 store_lib.Stores(conf)),
               hooks.MicroversionHook(),
               hooks.EmptyBodyHook(),
               read_model.ETagHook(),
               hooks.ErrorHook(conf.api.retry_after)],
        force_canonical=False,
        guess_content_type_from_ext=False,
        logging=False,
        debug=False,
    )
    if conf.api.auth_strategy == 'keystone':
        # Audited right after authentication: the initiator of each event
        # is the user auth_token validated.
        app = PublicPaths(auth_token.AuthProtocol(
            audit.wrap(app, conf), {'oslo_config_config': conf}), app)
    else:
        LOG.warning('API authentication is off ([api] auth_strategy = '
                    'noauth): every caller is an admin.')
        app = audit.wrap(app, conf)
    app = StreamedBodies(BodySizeLimit(SaneRequests(app), conf), app)
    app = request_id.RequestId(access_log.AccessLog(app))
    return metrics.Middleware(app, metrics_sources) \
        if conf.metrics.api_enabled else app
