"""Cutting a GPU into MIG devices (``/v2/devices/{uuid}/mig_layout``):
long work, followed as an operation."""

from cyborg_like.cli import common
from cyborg_like.cli import waiting


class ApplyDeviceMigLayout(waiting.FailAfterOutput, common.ShowOne):
    """Cut a GPU into the MIG devices of a layout, one NVML profile name
    per device (e.g. "3g.40gb 4g.40gb"; none for the whole GPU); the GPU
    is drained (maintaining) until it succeeds, and refused while anything
    is bound to it. Shows the operation doing it (follow it with --wait or
    "operation watch")."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The GPU')
        parser.add_argument('layout', metavar='<profile>', nargs='*',
                            help='A MIG profile name, once per MIG device '
                                 '(the device\'s vendor board info lists '
                                 'its mig_layout now)')
        return waiting.add_wait(parser, 'the new layout')

    def take_action(self, args):
        started = self.api.post('/devices/%s/mig_layout' % args.uuid,
                                {'layout': args.layout})
        return common.one(self.operation_result(started['operation'], args))
