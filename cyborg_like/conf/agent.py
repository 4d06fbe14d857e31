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
    cfg.StrOpt('bitstream_dir',
               default='$state_path/bitstreams',
               help='Directory holding the bitstreams this host can program, '
                    'one file per bitstream named by its id (the value of '
                    '"accel:bitstream_id" in device profiles), with an '
                    'optional "<id>.sha256" file holding its digest.'),
    cfg.FloatOpt('report_timeout',
                 default=30.0, min=0.1,
                 help='Seconds the agent waits for the conductor to accept '
                      'a report before it tries again at the next interval.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
