from oslo_config import cfg

GROUP = 'agent'

opts = [
    cfg.ListOpt('enabled_drivers',
                default=['fake'],
                help='Accelerator drivers the agent loads, by their name in '
                     'the entry-point group cyborg_like.accelerator.driver '
                     '(e.g. nvidia_gpu, pci, intel_fpga, xilinx_fpga, fake).'),
    cfg.IntOpt('discovery_interval',
               default=60, min=1,
               help='Seconds between two discoveries of the devices on this '
                    'host. The inventory is sent to the conductor only when '
                    'it changed, or when the conductor asks for it.'),
    cfg.IntOpt('heartbeat_interval',
               default=10, min=1,
               help='Seconds between two heartbeats to the conductor. Keep '
                    'it well below [conductor] host_down_after.'),
    cfg.StrOpt('heartbeat_delivery',
               default='stream',
               choices=[
                   ('stream', 'Publish the regular heartbeats on the '
                              'heartbeat stream, a queue of their own that '
                              'conductors read in batches (conductor RPC '
                              '1.21; to older conductors they are calls).'),
                   ('call', 'Call a conductor with each regular heartbeat '
                            'and wait for its answer.'),
                   ('cast', 'Cast each regular heartbeat to the conductors\' '
                            'RPC topic.')],
               help='How the regular heartbeats reach the conductors. A '
                    'streamed or cast beat needs no answer and carries a '
                    'deadline two heartbeat intervals away, past which a '
                    'conductor drops it unread (the next beat carries newer '
                    'readings); clocks must be in sync, as for every '
                    'deadline. A stream keeps a backlog of beats out of the '
                    'way of the API\'s calls and costs a conductor the least '
                    'per beat; a cast shares the API\'s queue, so beats '
                    'faster than the conductors ingest delay the API '
                    '(docs/benchmarks.md, "Heartbeats"). A driver\'s urgent '
                    'beat is always a call.'),
    cfg.StrOpt('bitstream_dir',
               default='$state_path/bitstreams',
               help='Directory holding the bitstreams this host can program, '
                    'one file per bitstream named by its id (the value of '
                    '"accel:bitstream_id" in device profiles), with an '
                    'optional "<id>.sha256" file holding its digest.'),
    cfg.StrOpt('image_cache_dir',
               default='$state_path/image_cache',
               help='Directory where the agent keeps the catalog images it '
                    'fetched (docs/catalog.md), each verified against its '
                    'sha256 before it is programmed. Files named in '
                    'bitstream_dir are still used for ids that are not '
                    'catalog images.'),
    cfg.IntOpt('image_cache_size',
               default=10240, min=1,
               help='Most MiB of images kept in image_cache_dir; beyond '
                    'it the least recently used images are removed (an '
                    'image larger than this is still fetched and used, '
                    'alone).'),
    cfg.FloatOpt('report_timeout',
                 default=30.0, min=0.1,
                 help='Seconds the agent waits for the conductor to accept '
                      'a report before it tries again at the next interval.'),
    cfg.IntOpt('report_pickup_timeout',
               default=4, min=2,
               help='Seconds the agent waits for any sign of a conductor '
                    'working on a report or heartbeat (a conductor sends '
                    'one every half of this while it works) before it '
                    'gives up on that call; report_timeout still bounds '
                    'the whole call. Keeps a report sent before any '
                    'conductor was listening from waiting report_timeout.'),
    cfg.FloatOpt('first_report_max_interval',
                 default=2.0, min=0.1,
                 help='Until the conductor has accepted its first report '
                      'the agent retries it with a pause doubling from '
                      '0.1 s up to this many seconds, so services may be '
                      'started in any order.'),
    cfg.StrOpt('playbook_dir',
               help='Directory of the driver playbooks, laid out as the '
                    'playbooks/ shipped with cyborg_like: one entry '
                    'playbook per action, install.yml (install and '
                    'upgrade), remove.yml and verify.yml, each running '
                    'the tasks file of that action in the role of the '
                    'family asked for, roles/<family>/tasks/'
                    '<action>.yml. Unset: the shipped playbooks.'),
    cfg.StrOpt('playbook_work_dir',
               default='$state_path/playbook-runs',
               help='Where each driver operation gets its private '
                    'ansible-runner data directory (inventory, extra '
                    'variables, artifacts), named by the operation.'),
    cfg.IntOpt('playbook_timeout',
               default=3600, min=1,
               help='Seconds a driver playbook may run before it is '
                    'stopped and its operation failed (a request may ask '
                    'for less).'),
    cfg.IntOpt('playbook_keep_runs',
               default=10, min=1,
               help='Private data directories of this many latest driver '
                    'operations are kept for inspection; older ones are '
                    'deleted after each run.'),
    cfg.IntOpt('playbook_artifacts_max_bytes',
               default=20 * 1024 * 1024, min=64 * 1024,
               help='Largest size of one run\'s artifacts: beyond it the '
                    'per-event files go and the output is cut to its end.'),
    cfg.FloatOpt('playbook_progress_interval',
                 default=2.0, min=0.1,
                 help='Seconds between two progress reports of a running '
                      'playbook to the conductor: its task events are '
                      'batched in between, so a playbook of many fast '
                      'tasks costs one call per interval. A report is sent '
                      'at that pace even without events, as a sign of life.'),
    cfg.IntOpt('playbook_result_retry_for',
               default=600, min=1,
               help='Seconds the agent keeps trying to tell the conductor '
                    'how a playbook ended while no conductor answers.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
