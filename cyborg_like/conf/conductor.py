from oslo_config import cfg

GROUP = 'conductor'

opts = [
    cfg.IntOpt('host_down_after',
               default=30, min=1,
               help='Seconds without a heartbeat after which a host counts '
                    'as down (three of [agent] heartbeat_interval by '
                    'default): its devices are not bound while it is down, '
                    'and bindings and operations under way on it are '
                    'failed.'),
    cfg.IntOpt('service_heartbeat_interval',
               default=5, min=1,
               help='Seconds between two heartbeats of each conductor to '
                    'the database. Every conductor also sweeps, this often, '
                    'the bindings and operations that nobody will finish '
                    '(their conductor or host is down) and fails them.'),
    cfg.IntOpt('service_down_after',
               default=15, min=2,
               help='Seconds without a heartbeat after which a conductor '
                    'counts as down and its unfinished bindings and '
                    'operations are failed by the others. Keep it at two to '
                    'three service_heartbeat_interval.'),
    cfg.IntOpt('max_queued_work',
               default=256, min=1,
               help='Bindings and operations each conductor accepts but has '
                    'not finished, at most. Beyond it, bind and program '
                    'requests are refused with 503 and Retry-After (nothing '
                    'is written), rather than queued until they time out.'),
    cfg.IntOpt('workers',
               default=8, min=1,
               help='Threads of each conductor that complete long requests '
                    'after accepting them: bindings of accelerator requests '
                    '(taking a handle, asking the agent to program and '
                    'prepare it) and programming of deployables.'),
    cfg.FloatOpt('heartbeat_flush_interval',
                 default=1.0, min=0.05,
                 help='Seconds a conductor gathers heartbeats before writing '
                      'them to the database in one transaction. Larger '
                      'batches cost fewer writes; the health shown by the API '
                      'lags by up to this much.'),
    cfg.IntOpt('heartbeat_batch_size',
               default=500, min=1,
               help='Heartbeats a conductor takes off the heartbeat stream '
                    '(agents\' [agent] heartbeat_delivery = stream) at a '
                    'time, at most. The broker hands each conductor up to '
                    'this many beyond what it is working on; the rest wait '
                    'in the queue for whichever conductor is free.'),
    cfg.FloatOpt('heartbeat_batch_timeout',
                 default=0.1, min=0.01,
                 help='Seconds a conductor waits for a batch of streamed '
                      'heartbeats to fill before it takes what came. They '
                      'are then written with the next flush '
                      '(heartbeat_flush_interval).'),
    cfg.FloatOpt('read_model_announce_spacing',
                 default=0.05, min=0.0,
                 help='Seconds a conductor waits after announcing committed '
                      'changes to the API processes\' read model before it '
                      'announces more; changes committed meanwhile go in one '
                      'announcement. Every ARQ write is a change (its '
                      'generation), so under a stream of writes this bounds '
                      'the announcements each API process consumes; others\' '
                      'writes reach the API processes up to this much later. '
                      '0: one announcement per commit, as fast as they can '
                      'be sent.'),
    cfg.IntOpt('metrics_retention',
               default=3600, min=60,
               help='Seconds of per-device health and utilization history '
                    'kept; older readings are deleted as new ones arrive.'),
    cfg.IntOpt('availability_changes_retention',
               default=86400, min=60,
               help='Seconds the availability feed keeps the hosts whose '
                    'offer changed: a poller whose cursor is older is told '
                    'to read the whole feed again (410).'),
    cfg.IntOpt('change_log_retention',
               default=90 * 86400, min=3600,
               help='Seconds the change log keeps its records (who changed '
                    'what, under which request id: GET /v2/changes). A '
                    'client answered 503 for a write finds its outcome '
                    'there by request id while the record is kept.'),
    cfg.IntOpt('usage_retention',
               default=400, min=1,
               help='Days the usage records (one per binding of an '
                    'accelerator request to a device, with its bind and '
                    'unbind times: GET /v2/usage, cyborg-like usage show) '
                    'are kept after their binding ended; a binding still '
                    'held is always kept. Usage of a period older than '
                    'this is no longer answered in full: keep it longer '
                    'than the longest period billed or shown back (400 '
                    'days: a year and a month). The Prometheus counter '
                    'cyborg_like_usage_device_seconds_total keeps what '
                    'pruned records counted.'),
    cfg.IntOpt('agent_timeout',
               default=600, min=1,
               help='Seconds the conductor waits for an agent to prepare '
                    'an attach handle, programming a bitstream included, '
                    'before the binding fails.'),
    cfg.IntOpt('firmware_timeout',
               default=3600, min=1,
               help='Seconds the conductor waits for an agent to flash a '
                    'device\'s firmware (fetching the image, the vendor '
                    'tool, the new discovery) before the operation fails '
                    'and the device stays drained. An unfinished firmware '
                    'operation older than twice this is failed by the '
                    'liveness sweep. Keep it above the drivers\' '
                    'flash_timeout.'),
    cfg.IntOpt('mig_layout_timeout',
               default=600, min=1,
               help='Seconds the conductor waits for an agent to apply a '
                    'MIG layout to a GPU (destroying and creating its GPU '
                    'and compute instances, the new discovery) before the '
                    'operation fails and the GPU stays drained. An '
                    'unfinished MIG layout operation older than twice this '
                    'is failed by the liveness sweep.'),
    cfg.IntOpt('release_wait',
               default=60, min=0,
               help='Seconds a binding waits for its deployable to be '
                    'released by its host (the previous holder\'s '
                    'attach handle given back, an FPGA region erased) '
                    'before it fails. Nova may place a new instance on a '
                    'device as soon as the old one is deleted.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
