"""One JSON error format for every failure the API answers.

The body is Cyborg's, which python-cyborgclient and openstacksdk parse,
plus a stable dotted ``error_code`` programs can test::

    {"error_message": "{\"faultcode\": \"Client\",
                        \"faultstring\": \"Device ... could not be found.\",
                        \"debuginfo\": null,
                        \"error_code\": \"accel.device.not_found\"}"}

Internal exceptions know nothing of HTTP; ``status_for`` maps their kind to
a status code here, at the edge.
"""

import json

import oslo_messaging as messaging
from oslo_context import context
from oslo_log import log as logging
import webob
import webob.exc

from cyborg_like.common import exception
from cyborg_like.common import rpc

LOG = logging.getLogger(__name__)

_STATUS_BY_KIND = (
    (exception.NotFound, 404),
    (exception.TooLarge, 413),
    (exception.Invalid, 400),
    (exception.Conflict, 409),
    (exception.Gone, 410),
    (exception.Forbidden, 403),
    (exception.ServiceUnavailable, 503),
)


def status_for(error):
    for kind, status in _STATUS_BY_KIND:
        if isinstance(error, kind):
            return status
    return 500


# Codes of errors that are not our exceptions (validation, routing).
_CODE_BY_STATUS = {400: 'accel.request.invalid', 401: 'accel.unauthorized',
                   403: 'accel.forbidden', 404: 'accel.not_found',
                   405: 'accel.method_not_allowed', 406: 'accel.version',
                   409: 'accel.conflict', 413: 'accel.request.too_large',
                   415: 'accel.request.unsupported_media_type',
                   503: 'accel.unavailable'}


def response(status, message, headers=None, code=None):
    fault = {'faultcode': 'Client' if status < 500 else 'Server',
             'faultstring': message, 'debuginfo': None,
             'error_code': code or _CODE_BY_STATUS.get(status, 'accel.error')}
    body = json.dumps({'error_message': json.dumps(fault)})
    resp = webob.Response(status=status, body=body.encode(),
                          content_type='application/json', charset='utf-8')
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


def from_http_exception(error):
    """The error response for a webob HTTP error (the API's own 4xx)."""
    return response(error.code, error.detail or error.explanation,
                    _passed_headers(error))


def from_exception(error, retry_after):
    """The error response for anything a handler raised; a 503 tells to
    retry after ``retry_after`` seconds ([api] retry_after)."""
    if isinstance(error, webob.exc.HTTPNotModified):
        return error        # not an error: read_model.ETagHook's 304
    if isinstance(error, webob.exc.HTTPException):
        return from_http_exception(error)
    if isinstance(error, rpc.WriteNotDone):
        LOG.error('Request %s: %s', _request_id(), error)
        return unavailable(
            'No conductor answered request %s in time. No conductor '
            'carries it out after its deadline, which has passed: it was '
            'not carried out, unless a conductor did it before and its '
            'answer was lost: GET /v2/changes?request_id=%s lists what '
            'it changed, once the service answers again (nothing: not '
            'carried out). Try again later.'
            % (_request_id(), _request_id()), retry_after,
            code='accel.conductor.unreachable' if error.unreachable
            else None)
    if isinstance(error, messaging.MessagingTimeout):
        LOG.error('The conductor did not answer in time: %s', error)
        return unavailable('The conductor did not answer in time; the '
                           'service may be down or overloaded. Try again '
                           'later.', retry_after)
    if isinstance(error, messaging.RemoteError):
        # The conductor failed unexpectedly: the message holds its
        # traceback, server paths and SQL. They stay in the log, under the
        # request id the client is given in X-OpenStack-Request-ID.
        LOG.error('Request %(request_id)s: the conductor failed: %(error)s',
                  {'request_id': _request_id(), 'error': error})
        return _unexpected('accel.conductor.error')
    if isinstance(error, messaging.MessagingException):
        # The text may name the broker's address: logged, not answered.
        LOG.error('Could not reach the conductor: %s', error)
        return unavailable('Could not reach the conductor; the message '
                           'broker may be down. Try again later.',
                           retry_after, code='accel.conductor.unreachable')
    if isinstance(error, exception.CyborgLikeException):
        status = status_for(error)
        headers = ({'Retry-After': str(retry_after)}
                   if status == 503 else None)
        return response(status, error.message, headers,
                        code=error.error_code)
    # Built-in exceptions of the conductor (a RuntimeError) are rebuilt
    # as themselves, their message holding its traceback: logged, not sent.
    LOG.exception('Request %s: unexpected error', _request_id())
    return _unexpected('accel.error')


def _request_id():
    current = context.get_current()
    return getattr(current, 'request_id', None)


def _unexpected(code):
    return response(500, 'An unexpected error prevented the request from '
                         'being fulfilled; the service logs tell more under '
                         'its request id.', code=code)


def unavailable(message, retry_after, code=None):
    """503 with Retry-After ([api] retry_after): the conductor or the
    broker is away; the request was not carried out and may be retried."""
    return response(503, message,
                    {'Retry-After': str(retry_after)}, code=code)


def _passed_headers(error):
    wanted = ('Allow', 'OpenStack-API-Minimum-Version',
              'OpenStack-API-Maximum-Version', 'Vary', 'Retry-After')
    return {k: v for k, v in error.headers.items() if k in wanted}
