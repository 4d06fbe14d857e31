"""Devices: the physical accelerators (``/v2/devices``), taken out of
service and put back (``disable``/``enable``)."""

from cyborg_like.cli import common

# drained and drain_reasons come with microversion 2.4 (empty before).
COLUMNS = ('uuid', 'type', 'vendor', 'model', 'hostname', 'status',
           'drained')
LONG_COLUMNS = COLUMNS + ('drain_reasons', 'std_board_info',
                          'vendor_board_info', 'created_at', 'updated_at')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'type', 'vendor', 'model',
             'hostname', 'status')


class ListDevice(common.Lister):
    """List devices."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--type', metavar='<type>',
                            help='Only devices of this type (GPU, FPGA...)')
        parser.add_argument('--vendor', metavar='<vendor-id>',
                            help='Only this PCI vendor (e.g. 0x10de)')
        parser.add_argument('--hostname', metavar='<hostname>',
                            help='Only devices of this host')
        parser.add_argument('--status', choices=('enabled', 'maintaining'),
                            help='Only devices in this status')
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(type=args.type, vendor=args.vendor,
                      hostname=args.hostname, status=args.status)
        devices = self.api.list('/devices', 'devices', params, all_pages)
        return common.rows(devices, LONG_COLUMNS if args.long else COLUMNS)


class _OneDevice(common.ShowOne):

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The device')
        return parser


class ShowDevice(_OneDevice):
    """Show a device."""

    def take_action(self, args):
        return common.one(self.api.get('/devices/%s' % args.uuid))


class DisableDevice(_OneDevice):
    """Take a device out of service (maintaining): it is not bound until
    enabled again; what is bound stays bound."""

    def take_action(self, args):
        return common.one(self.api.post('/devices/%s/disable' % args.uuid))


class EnableDevice(_OneDevice):
    """Put a device back in service (enabled)."""

    def take_action(self, args):
        return common.one(self.api.post('/devices/%s/enable' % args.uuid))
