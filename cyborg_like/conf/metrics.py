"""[metrics]: Prometheus metrics of the conductors and the API
(docs/metrics.md)."""

from oslo_config import cfg

GROUP = 'metrics'

opts = [
    cfg.HostAddressOpt('conductor_listen_host',
                       default='127.0.0.1',
                       help='Address on which each conductor serves its '
                            'Prometheus metrics (GET /metrics). The series '
                            'name projects and instances holding devices: '
                            'serve them where only the monitoring system '
                            'reaches.'),
    cfg.PortOpt('conductor_listen_port',
                default=0,
                help='Port on which each conductor serves its metrics; 0 '
                     'serves none. Conductors sharing a host need a port '
                     'each.'),
    cfg.IntOpt('fleet_cache_seconds',
               default=15, min=0,
               help='Seconds a conductor reuses its snapshot of the fleet '
                    '(devices, hosts, resource classes, operations) '
                    'between scrapes. The snapshot takes a constant number '
                    'of queries whatever the number of devices; 0 takes '
                    'one per scrape. Only the exporting conductor (the '
                    'oldest alive one) takes it.'),
    cfg.BoolOpt('api_enabled',
                default=True,
                help='Whether the API serves its own metrics (request '
                     'latency by route and status, requests in flight) at '
                     'GET /metrics, without authentication; they hold no '
                     'project data. With several worker processes set '
                     'PROMETHEUS_MULTIPROC_DIR (docs/metrics.md).'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
