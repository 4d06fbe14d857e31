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
    cfg.IntOpt('project_max_devices',
               default=-1, min=-1,
               help="The most devices one project's active leases may "
                    'hold, added up over its leases (a lease of 2 devices '
                    'and one of 3: 5). A lease that would go beyond it is '
                    'refused (403 accel.lease.limit_exceeded); a lease '
                    'counts until it expires, is given back or is '
                    'revoked. The same for every project; -1: no limit.'),
    cfg.IntOpt('project_max_device_hours',
               default=-1, min=-1,
               help="The most device-hours one project's active leases "
                    'may hold between now and the lease horizon '
                    '([leases] horizon_days): the hours of each window '
                    'in that span times the devices of its lease. A lease '
                    'that would go beyond it is refused (403 '
                    'accel.lease.limit_exceeded). The same for every '
                    'project; -1: no limit.'),
    cfg.StrOpt('preemption_action',
               default='shelve_offload',
               choices=[
                   ('shelve_offload',
                    'Nova is asked (with the [nova] service credentials) '
                    'to shelve the instance, then to offload it once '
                    'shelved (at once where Nova offloads shelved '
                    'instances itself: shelved_offload_time = 0). The '
                    'guest is stopped and leaves its host; Nova deletes '
                    'its accelerator requests as it offloads it, which '
                    'frees the device. The instance is SHELVED_OFFLOADED; '
                    'its owner unshelves it later (Nova then asks for '
                    'new accelerators of the same device profile).'),
                   ('notify',
                    'Nova is asked nothing: the holders got the '
                    'accelerator.lease.starting (or .ending) notification '
                    'and the lease_starts_at (lease_ends_at) field, and '
                    'the instance keeps running with the device. The '
                    'lease waits until Nova releases it (the instance '
                    'deleted, shelved, resized or its requests unbound '
                    'by Nova).')],
               help='What happens to an instance bound through Nova to a '
                    'device a lease needs back: another project\'s '
                    'instance at a window\'s start plus grace_seconds (a '
                    'preemption, which only cyborg:lease:preempt allows), '
                    'or the lessee\'s at its window\'s end plus '
                    'grace_seconds and at a give-back or revocation. The '
                    'device is never taken from a running guest behind '
                    'Nova\'s back: it goes to the lessee (or back to the '
                    'owner) only once Nova released the request. '
                    'Requests bound by standalone scheduling (no Nova) '
                    'are unbound. Without [nova] auth_type Nova cannot be '
                    'asked and the instance keeps the device.'),
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
