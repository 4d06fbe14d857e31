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
from oslo_log import log as logging
import webob
import webob.exc

from cyborg_like.common import exception

LOG = logging.getLogger(__name__)

_STATUS_BY_KIND = (
    (exception.NotFound, 404),
    (exception.Invalid, 400),
    (exception.Conflict, 409),
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
                   409: 'accel.conflict', 503: 'accel.unavailable'}


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


def from_exception(error):
    """The error response for anything a handler raised."""
    if isinstance(error, webob.exc.HTTPException):
        return response(error.code, error.detail or error.explanation,
                        _passed_headers(error))
    if isinstance(error, messaging.MessagingTimeout):
        LOG.error('The conductor did not answer in time: %s', error)
        return response(503, 'The conductor did not answer in time; the '
                             'service may be down or overloaded. Try again '
                             'later.')
    if isinstance(error, messaging.MessagingException):
        LOG.error('Could not reach the conductor: %s', error)
        return response(503, 'Could not reach the conductor: %s' % error)
    if isinstance(error, exception.CyborgLikeException):
        return response(status_for(error), error.message,
                        code=error.error_code)
    LOG.exception('Unexpected error')
    return response(500, 'An unexpected error prevented the request from '
                         'being fulfilled.')


def _passed_headers(error):
    wanted = ('Allow', 'OpenStack-API-Minimum-Version',
              'OpenStack-API-Maximum-Version', 'Vary', 'Retry-After')
    return {k: v for k, v in error.headers.items() if k in wanted}
