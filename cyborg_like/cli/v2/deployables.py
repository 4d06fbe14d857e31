"""Deployables: what can be handed out (FPGA regions, GPUs, slices)
(``/v2/deployables``), and programming an FPGA region."""

from cyborg_like.cli import common
from cyborg_like.cli import waiting

COLUMNS = ('uuid', 'name', 'num_accelerators', 'driver_name',
           'bitstream_id', 'rp_uuid')
LONG_COLUMNS = COLUMNS + ('device_id', 'parent_id', 'root_id',
                          'attributes_list', 'created_at', 'updated_at')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'name', 'num_accelerators')


class ListDeployable(common.Lister):
    """List deployables."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', metavar='<name>',
                            help='Only deployables of this name')
        parser.add_argument('--driver-name', metavar='<driver>',
                            help='Only deployables of this driver')
        parser.add_argument('--rp-uuid', metavar='<uuid>',
                            help='Only the deployable of this resource '
                                 'provider')
        parser.add_argument('--bitstream-id', metavar='<bitstream>',
                            help='Only regions programmed with this '
                                 'bitstream')
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(name=args.name, driver_name=args.driver_name,
                      rp_uuid=args.rp_uuid, bitstream_id=args.bitstream_id)
        found = self.api.list('/deployables', 'deployables', params,
                              all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowDeployable(common.ShowOne):
    """Show a deployable."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The deployable')
        return parser

    def take_action(self, args):
        return common.one(self.api.get('/deployables/%s' % args.uuid))


class ProgramDeployable(waiting.FailAfterOutput, common.ShowOne):
    """Program an FPGA region with a bitstream; shows the operation doing
    it (follow it with --wait or "operation watch")."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>',
                            help='The deployable (an FPGA region)')
        parser.add_argument(
            'bitstream', metavar='<bitstream-id>',
            help="A file in the host's [agent] bitstream_dir")
        return waiting.add_wait(parser, 'the programming')

    def take_action(self, args):
        started = self.api.patch(
            '/deployables/%s/program' % args.uuid,
            [{'op': 'replace', 'path': '/bitstream_id',
              'value': args.bitstream}])
        return common.one(self.operation_result(started['operation'], args))
