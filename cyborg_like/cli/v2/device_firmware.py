"""Flashing a device's firmware with a catalog image
(``/v2/devices/{uuid}/firmware``): long work, followed as an operation."""

from cyborg_like.cli import common
from cyborg_like.cli import waiting


class FlashDeviceFirmware(waiting.FailAfterOutput, common.ShowOne):
    """Flash a device's firmware with a catalog image of kind firmware;
    the device is drained (maintaining) until it succeeds. Shows the
    operation doing it (follow it with --wait or "operation watch")."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The device')
        parser.add_argument('image', metavar='<image-uuid>',
                            help='A firmware image of the catalog '
                                 '("bitstream list --kind firmware")')
        return waiting.add_wait(parser, 'the flashing')

    def take_action(self, args):
        started = self.api.post('/devices/%s/firmware' % args.uuid,
                                {'image_uuid': args.image})
        return common.one(self.operation_result(started['operation'], args))
