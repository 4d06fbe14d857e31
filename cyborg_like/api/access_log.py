"""One log line per API request, as OpenStack services write them.

    127.0.0.1 "GET /v2/devices?limit=2" status: 200 len: 512 time: 3.1 ms
    request: req-0f2c... project: 8d1b...

Logger ``cyborg_like.api.access`` at INFO (set ``default_log_levels``
``cyborg_like.api.access=WARN`` to silence it). It wraps every other
middleware but oslo.middleware's request id, so refused requests (413,
415, 401) are logged too. The time is until the application returned its
response, which the API renders whole before returning.
"""

import time

from oslo_context import context as context_lib
from oslo_log import log as logging
from oslo_middleware import request_id

LOG = logging.getLogger('cyborg_like.api.access')


class AccessLog:
    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        started = time.monotonic()
        seen = {}

        def recording_start_response(status, headers, exc_info=None):
            seen['status'] = status.split(' ', 1)[0]
            seen['length'] = next((value for name, value in headers
                                   if name.lower() == 'content-length'), '-')
            return start_response(status, headers, exc_info)

        result = self.application(environ, recording_start_response)
        self._log(environ, seen, time.monotonic() - started)
        return result

    @staticmethod
    def _log(environ, seen, elapsed):
        path = environ.get('SCRIPT_NAME', '') + environ.get('PATH_INFO', '')
        if environ.get('QUERY_STRING'):
            path += '?' + environ['QUERY_STRING']
        ctx = environ.get('webob.adhoc_attrs', {}).get('context')
        req_id = environ.get(request_id.ENV_REQUEST_ID, '-')
        project = (getattr(ctx, 'project_id', None)
                   or environ.get('HTTP_X_PROJECT_ID') or '-')
        # The request's own context, or one with its id, so the line's
        # prefix never shows the id of an earlier request on this thread.
        ctx = ctx or context_lib.RequestContext(request_id=req_id,
                                                project_id=project,
                                                overwrite=False)
        LOG.info('%(remote)s "%(method)s %(path)s" status: %(status)s len: '
                 '%(length)s time: %(ms).1f ms request: %(request)s '
                 'project: %(project)s',
                 {'remote': environ.get('REMOTE_ADDR', '-'),
                  'method': environ.get('REQUEST_METHOD'), 'path': path,
                  'status': seen.get('status', '-'),
                  'length': seen.get('length', '-'), 'ms': elapsed * 1000,
                  'request': req_id, 'project': project}, context=ctx)
