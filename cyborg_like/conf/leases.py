"""[leases]: lending devices to a project for windows of time
(docs/leases.md)."""

from oslo_config import cfg

GROUP = 'leases'

opts = [
    cfg.IntOpt('horizon_days',
               default=28, min=1, max=366,
               help='How far ahead a lease is guaranteed, in days. A new '
                    "lease's windows are checked against every other "
                    'lease of the same devices up to this far ahead (no '
                    'overbooking); the windows of recurring leases are '
                    'written this far ahead and the horizon moves on with '
                    'the lease periodic. Beyond it a later window of a '
                    'recurring lease that would overlap an older lease of '
                    'the same device is skipped (the older lease wins). '
                    'The availability feed answers ?at= up to this far '
                    'ahead.'),
    cfg.IntOpt('max_windows',
               default=2000, min=1,
               help='The most windows one lease may have within the '
                    'horizon: a recurrence rule with more (FREQ=MINUTELY) '
                    'is refused at creation.'),
    cfg.IntOpt('notice_seconds',
               default=900, min=0,
               help='How long before a window ends its lessee is told: the '
                    'accelerator.lease.ending notification, and the '
                    'lease_ends_at field of each of its accelerator '
                    'requests bound to the devices. As long before a '
                    'window starts, other projects holding the devices '
                    'are told: the accelerator.lease.starting '
                    'notification, and the lease_starts_at field of each '
                    'of their accelerator requests bound to them.'),
    cfg.IntOpt('grace_seconds',
               default=300, min=0,
               help="How long after a window's end the lessee's "
                    'accelerator requests still bound to the devices are '
                    'unbound (as an unbind by Nova would, the handles '
                    'released by their agents); until then the devices '
                    "stay reserved in Placement. As long after a window's "
                    "start other projects' accelerator requests still "
                    'bound to the devices (bound before the window) are '
                    'unbound the same way: the lease preempts them.'),
    cfg.IntOpt('check_interval',
               default=30, min=1,
               help='Seconds between runs of the lease periodic of each '
                    'conductor: windows opening, notices, unbinding at a '
                    "window's start (other projects) and end (the "
                    'lessee), leases expiring, the horizon moving on. A '
                    'boundary is acted on within this much of its '
                    'time (binding checks use the exact times).'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
