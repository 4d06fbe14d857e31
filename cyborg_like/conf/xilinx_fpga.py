from oslo_config import cfg

GROUP = 'xilinx_fpga'

opts = [
    cfg.ListOpt('mgmt_device_ids',
                default=['10ee:5004', '10ee:5000'],
                help='vendor:product ids of the management physical '
                     'functions (bound to XRT\'s xclmgmt) of the Xilinx '
                     'Alveo cards the xilinx_fpga driver manages: U250 and '
                     'U200 by default. A card is one device, identified by '
                     'its management function.'),
    cfg.ListOpt('user_device_ids',
                default=['10ee:5005', '10ee:5001'],
                help='vendor:product ids of the user physical functions '
                     '(bound to XRT\'s xocl). The user function on the same '
                     'PCI slot as a management function is the attach '
                     'handle given to instances.'),
    cfg.StrOpt('xbmgmt_path',
               help='Path of XRT\'s xbmgmt tool, which programs an .xclbin '
                    'into the card\'s user partition through its '
                    'management function. Unset: xbmgmt is looked up on '
                    'PATH.'),
    cfg.IntOpt('program_timeout',
               default=300, min=1,
               help='Seconds xbmgmt may take to program an xclbin before '
                    'the driver gives up and reports a failure.'),
    cfg.IntOpt('flash_timeout',
               default=3600, min=1,
               help='Seconds "xbmgmt program --base" may take to flash a '
                    'card\'s base/shell image before the driver gives up '
                    'and reports a failure; the device stays drained '
                    'then.'),
    cfg.BoolOpt('require_bitstream_checksum',
                default=True,
                help='Refuse to program an xclbin whose expected sha256 is '
                     'unknown. The digest comes from the file '
                     '<xclbin>.sha256 beside it (sha256sum format) or from '
                     'the caller. An xclbin whose digest does not match is '
                     'always refused.'),
    cfg.BoolOpt('erase_on_release',
                default=False,
                help='When an attach handle is released, program the user '
                     'partition with [xilinx_fpga] erase_bitstream so the '
                     'next tenant finds no trace of the previous '
                     'accelerator.'),
    cfg.StrOpt('erase_bitstream',
               help='xclbin programmed on release when erase_on_release is '
                    'set, typically an empty design built for the card\'s '
                    'shell. Its sha256 is checked like any other '
                    'xclbin\'s.'),
    cfg.StrOpt('xbutil_path',
               help='Path of XRT\'s xbutil tool, whose "examine --report '
                    'electrical thermal mechanical --format JSON" the '
                    'driver reads for a card\'s health (board power, '
                    'temperatures, fans, power rails) through its user '
                    'function. Unset: xbutil is looked up on PATH. '
                    'Without it the health readings list these sensors '
                    'as unchecked.'),
    cfg.IntOpt('examine_timeout',
               default=30, min=1,
               help='Seconds "xbutil examine" may take before the driver '
                    'stops it; the sensors it reports are then listed as '
                    'unchecked in that health reading.'),
    cfg.IntOpt('examine_cache_seconds',
               default=60, min=0,
               help='Seconds a card\'s "xbutil examine" report (or its '
                    'failure) is reused before the tool runs again, so a '
                    'heartbeat every few seconds does not start a process '
                    'each time. 0 runs it for every health reading.'),
    cfg.FloatOpt('critical_temperature_c',
                 default=95.0,
                 help='A temperature XRT reports for a card (FPGA, board, '
                      'cages) at or above this many degrees Celsius makes '
                      'the card unhealthy. XRT\'s report carries no '
                      'thresholds of its own for the Alveo\'s sensors; '
                      'the default keeps a margin below the 100 degree '
                      'maximum junction temperature of the UltraScale+ '
                      'FPGAs on U200/U250 cards.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
