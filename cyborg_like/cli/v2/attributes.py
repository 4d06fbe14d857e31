"""Attributes: resource class and traits of deployables
(``/v2/attributes``)."""

from cyborg_like.cli import common

COLUMNS = ('uuid', 'deployable_id', 'key', 'value')
LONG_COLUMNS = COLUMNS + ('created_at', 'updated_at')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'key')


class ListAttribute(common.Lister):
    """List attributes."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--deployable-id', type=int, metavar='<id>',
                            help='Only attributes of the deployable of this '
                                 'integer id (a device_id, parent_id or '
                                 'root_id of deployables)')
        parser.add_argument('--key', metavar='<key>',
                            help='Only attributes of this key')
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(key=args.key, deployable_id=(
            None if args.deployable_id is None else str(args.deployable_id)))
        found = self.api.list('/attributes', 'attributes', params,
                              all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowAttribute(common.ShowOne):
    """Show an attribute."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The attribute')
        return parser

    def take_action(self, args):
        return common.one(self.api.get('/attributes/%s' % args.uuid))


class CreateAttribute(common.ShowOne):
    """Add an attribute to a deployable (kept when the agent reports the
    deployable again)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--deployable-id', type=int, required=True,
                            metavar='<id>',
                            help='The integer id of the deployable')
        parser.add_argument('--key', required=True, metavar='<key>')
        parser.add_argument('--value', required=True, metavar='<value>')
        return parser

    def take_action(self, args):
        return common.one(self.api.post('/attributes', {
            'deployable_id': args.deployable_id, 'key': args.key,
            'value': args.value}))


class DeleteAttribute(common.Command):
    """Delete attributes."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuids', metavar='<uuid>', nargs='+',
                            help='The attributes')
        return parser

    def take_action(self, args):
        common.delete_each(
            lambda uuid: self.api.delete('/attributes/%s' % uuid),
            args.uuids, 'attribute')
