"""Operations: long work done by agents, such as programming
(``/v2/operations``), shown, listed and followed to their end."""

from cyborg_like.cli import common
from cyborg_like.cli import waiting
from cyborg_like.common import states

COLUMNS = ('uuid', 'type', 'target_uuid', 'state', 'detail', 'created_at',
           'updated_at')
LONG_COLUMNS = COLUMNS + ('project_id',)
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')


class ListOperation(common.Lister):
    """List operations."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--target', metavar='<uuid>',
                            help='Only operations on this deployable')
        parser.add_argument('--state', choices=states.OPERATION.states,
                            help='Only operations in this state')
        parser.add_argument('--type', metavar='<type>',
                            help='Only operations of this type (program)')
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(target_uuid=args.target, state=args.state,
                      type=args.type)
        found = self.api.list('/operations', 'operations', params, all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowOperation(common.ShowOne):
    """Show an operation."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The operation')
        return parser

    def take_action(self, args):
        return common.one(self.api.get('/operations/%s' % args.uuid))


class WatchOperation(waiting.FailAfterOutput, common.ShowOne):
    """Follow an operation until it ends, showing its state, elapsed time
    and progress events; exit 1 with the reason if it fails."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The operation')
        parser.add_argument(
            '--timeout', type=int, default=waiting.DEFAULT_TIMEOUT,
            metavar='<seconds>',
            help='Give up following after <seconds> (0: never; default: '
                 '%d); the operation goes on' % waiting.DEFAULT_TIMEOUT)
        return parser

    def take_action(self, args):
        operation = waiting.follow_operation(self.api, args.uuid,
                                             args.timeout)
        self.failure = waiting.operation_failure(operation)
        return common.one(operation)


class CancelOperation(common.ShowOne):
    """Cancel a driver operation: it is cancelling until its agent stopped
    the playbook, then cancelled (the devices stay drained if it had
    started)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The operation')
        return parser

    def take_action(self, args):
        return common.one(self.api.post('/operations/%s/cancel' % args.uuid))
