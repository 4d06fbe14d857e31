from oslo_config import cfg

GROUP = 'intel_fpga'

opts = [
    cfg.ListOpt('device_ids',
                default=['8086:0b30', '8086:0b2b', '8086:09c4'],
                help='vendor:product ids of the Intel FPGA cards (physical '
                     'functions driven by the kernel\'s dfl-pci driver) the '
                     'intel_fpga driver manages: PAC N3000, PAC D5005 and '
                     'PAC with Arria 10 GX by default.'),
    cfg.StrOpt('fpgaconf_path',
               help='Path of OPAE\'s fpgaconf tool, which programs a '
                    'green bitstream (.gbs) into a card\'s PR region. '
                    'Unset: fpgaconf is looked up on PATH.'),
    cfg.IntOpt('program_timeout',
               default=300, min=1,
               help='Seconds fpgaconf may take to program a bitstream '
                    'before the driver gives up and reports a failure.'),
    cfg.StrOpt('fpgasupdate_path',
               help='Path of OPAE\'s fpgasupdate tool, which writes a '
                    'signed FIM (static region) or BMC image into a PAC\'s '
                    'flash through the card\'s secure update (firmware '
                    'operations on a device). Unset: fpgasupdate is looked '
                    'up on PATH.'),
    cfg.IntOpt('flash_timeout',
               default=3600, min=1,
               help='Seconds fpgasupdate may take to flash a card (a N3000 '
                    'FIM update takes tens of minutes) before the driver '
                    'gives up and reports a failure; the device stays '
                    'drained then.'),
    cfg.BoolOpt('require_bitstream_checksum',
                default=True,
                help='Refuse to program a bitstream whose expected sha256 '
                     'is unknown. The digest comes from the file '
                     '<bitstream>.sha256 beside the bitstream (sha256sum '
                     'format) or from the caller. A bitstream whose digest '
                     'does not match is always refused.'),
    cfg.BoolOpt('erase_on_release',
                default=False,
                help='When an attach handle is released, program the region '
                     'with [intel_fpga] erase_bitstream so the next tenant '
                     'finds no trace of the previous accelerator.'),
    cfg.StrOpt('erase_bitstream',
               help='Green bitstream (.gbs) programmed on release when '
                    'erase_on_release is set, typically a "null" AFU '
                    'built for the card\'s PR interface. Its sha256 is '
                    'checked like any other bitstream\'s.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
