"""[health]: what the conductor does with devices' health readings."""

from oslo_config import cfg

GROUP = 'health'

opts = [
    cfg.BoolOpt('auto_drain',
                default=True,
                help='Drain a device (not bindable, its Placement inventory '
                     'reserved) as soon as a reading says it is unhealthy. '
                     'When false, unhealthy devices are only flagged: they '
                     'stay bindable and an alert is up to the operator.'),
    cfg.IntOpt('recovery_checks',
               default=3, min=1,
               help='How many healthy readings in a row return a drained or '
                    'flagged device to service. A device an operator '
                    'disabled stays disabled.'),
    cfg.IntOpt('breaker_window',
               default=3600, min=1,
               help='Seconds over which automatic drains are counted for '
                    'the circuit breaker.'),
    cfg.IntOpt('max_drains_per_host',
               default=4, min=0,
               help='Automatic drains allowed per host within '
                    'breaker_window; past it, that host\'s unhealthy '
                    'devices are only flagged.'),
    cfg.IntOpt('max_drains',
               default=50, min=0,
               help='Automatic drains allowed in the whole fleet within '
                    'breaker_window; past it, unhealthy devices are only '
                    'flagged, so a fleet-wide false alarm cannot drain the '
                    'fleet.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
