"""GET /metrics of the API: request latency, requests and calls to the
conductors in flight (docs/metrics.md).

Only these series, labelled by route *template* (as the OpenAPI document
writes it: /v2/devices/{uuid}, never a raw path), method and status: no
project, user or resource identifier, so the path is public like version
discovery (app.PUBLIC_PATHS).

With several worker processes (gunicorn, uWSGI) each worker counts its
own requests: set PROMETHEUS_MULTIPROC_DIR to an empty directory writable
by all of them, and prometheus_client then keeps the values in files
there and any worker answers /metrics with the sum of all of them.
"""

import functools
import os
import re
import time

import prometheus_client
from prometheus_client import multiprocess

from cyborg_like.api import openapi

PATH = '/metrics'
MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'
OTHER = 'other'
# Segments served as aliases of /v2/<segment> unless they are these
# (controllers/root.py OWN_SEGMENTS).
_OWN = ('', 'v2', 'openapi.yaml', 'openapi.json')

REGISTRY = prometheus_client.CollectorRegistry(auto_describe=True)
DURATION = prometheus_client.Histogram(
    'cyborg_like_api_request_duration_seconds',
    'Time to answer an API request, by route template, method and status.',
    ['route', 'method', 'status'],
    buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY)
IN_FLIGHT = prometheus_client.Gauge(
    'cyborg_like_api_requests_in_flight',
    'API requests being answered now.', multiprocess_mode='livesum',
    registry=REGISTRY)
# 0 once the broker is back after an outage: nothing this API sent, or
# went on trying to send after it answered 503, can reach a conductor any
# more (docs/metrics.md "Drained").
RPC_CALLS_IN_FLIGHT = prometheus_client.Gauge(
    'cyborg_like_api_rpc_calls_in_flight',
    'Calls to the conductors still being sent or waited for, including '
    'those whose request was already answered (a publish retrying while '
    'the broker is away).', multiprocess_mode='livesum', registry=REGISTRY)


@functools.cache
def _templates():
    """(regex, template) of the documented paths, literal ones first."""
    table = []
    for template in openapi.document()['paths']:
        parts = re.split(r'(\{[^}/]+\})', template)
        regex = ''.join('[^/]+' if part.startswith('{') else re.escape(part)
                        for part in parts)
        table.append(('{' in template, re.compile(regex + r'\Z'), template))
    table.sort(key=lambda row: row[0])
    return [(regex, template) for _, regex, template in table]


def route_of(path):
    """The documented template ``path`` matches (Cyborg's unversioned
    aliases as their /v2 path), or 'other'."""
    path = path.rstrip('/') or '/'
    if path.split('/')[1] not in _OWN:
        path = '/v2' + path
    for regex, template in _templates():
        if regex.match(path):
            return template
    return OTHER


def registry_to_serve():
    """What /metrics shows: with PROMETHEUS_MULTIPROC_DIR, the values of
    every worker process; else this process's."""
    if os.environ.get(MULTIPROC_ENV):
        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


class Middleware:
    """Measures every request and answers GET /metrics itself.

    ``sources`` are callables giving more series in Prometheus's text
    format, served after the API's own: the all-in-one passes its
    conductor's (process and fleet series), which would otherwise need a
    port of their own ([metrics] conductor_listen_port)."""

    def __init__(self, application, sources=()):
        self.application = application
        self.sources = tuple(sources)

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '') or '/'
        if path == PATH:
            return self._serve(environ, start_response)
        route = route_of(path)
        method = environ.get('REQUEST_METHOD', 'GET')
        seen = {}

        def recording(status, headers, exc_info=None):
            seen['status'] = status.split(' ', 1)[0]
            return start_response(status, headers, exc_info)

        started = time.monotonic()
        IN_FLIGHT.inc()
        try:
            result = self.application(environ, recording)
        finally:
            IN_FLIGHT.dec()
            DURATION.labels(route, method, seen.get('status', '500')).observe(
                time.monotonic() - started)
        return result

    def _serve(self, environ, start_response):
        if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            start_response('405 Method Not Allowed',
                           [('Allow', 'GET, HEAD'),
                            ('Content-Length', '0')])
            return [b'']
        body = prometheus_client.generate_latest(registry_to_serve()) + \
            b''.join(source() for source in self.sources)
        start_response('200 OK', [
            ('Content-Type', prometheus_client.CONTENT_TYPE_LATEST),
            ('Content-Length', str(len(body)))])
        return [b'' if environ['REQUEST_METHOD'] == 'HEAD' else body]


def child_exit(server, worker):
    """gunicorn's child_exit hook (etc/cyborg_like/gunicorn.conf.py): the
    live gauges of a worker that exited stop counting."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(worker.pid)
