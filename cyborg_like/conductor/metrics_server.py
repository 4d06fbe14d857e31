"""GET /metrics of a conductor on [metrics] conductor_listen_port: this
process's series (conductor/metrics.py), then the fleet's as last
rendered (conductor/fleet_metrics.py)."""

import threading
from wsgiref import simple_server

from oslo_log import log as logging
import prometheus_client
from prometheus_client import exposition

from cyborg_like.conductor import drain_breaker
from cyborg_like.conductor import fleet_metrics
from cyborg_like.conductor import metrics

LOG = logging.getLogger(__name__)


class _Process:
    """The process series, in a registry of their own."""

    def collect(self):
        return metrics.PROCESS.collect()


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        pass    # a scrape every few seconds is not news


class MetricsServer:
    """GET /metrics of one conductor on [metrics] conductor_listen_port,
    served by prometheus_client's HTTP server in a thread."""

    def __init__(self, conf, conductor_uuid):
        self.conf = conf
        self.registry = prometheus_client.CollectorRegistry(
            auto_describe=False)
        self._process = _Process()
        self.registry.register(self._process)
        self.fleet = fleet_metrics.FleetCollector(
            conductor_uuid, conf.metrics.fleet_cache_seconds,
            conf.conductor.service_down_after,
            conf.conductor.host_down_after,
            drain_breaker.DrainBreaker(conf.health))
        self.registry.register(self.fleet)
        self._server = self._thread = None

    @property
    def enabled(self):
        return bool(self.conf.metrics.conductor_listen_port)

    def app(self, environ, start_response):
        """GET /metrics: this process's series, then the fleet's as last
        rendered."""
        if environ.get('PATH_INFO') not in ('/', '/metrics'):
            start_response('404 Not Found', [('Content-Type', 'text/plain')])
            return [b'Not Found\n']
        body = self.text()
        start_response('200 OK', [
            ('Content-Type', prometheus_client.CONTENT_TYPE_LATEST),
            ('Content-Length', str(len(body)))])
        return [body]

    def text(self):
        """This process's series, then the fleet's as last rendered, in
        Prometheus's text format (also served by the all-in-one's API)."""
        return (prometheus_client.generate_latest(self._process)
                + self.fleet.text())

    def start(self):
        if not self.enabled:
            return
        host = self.conf.metrics.conductor_listen_host
        port = self.conf.metrics.conductor_listen_port
        self._server = simple_server.make_server(
            host, port, self.app, exposition.ThreadingWSGIServer,
            handler_class=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name='metrics-server', daemon=True)
        self._thread.start()
        LOG.info('Conductor metrics on http://%s:%d/metrics', host, port)

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = self._thread = None
