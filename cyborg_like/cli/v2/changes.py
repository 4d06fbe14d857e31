"""The change log (``/v2/changes``): who changed what, under which
request id. ``change list --request-id <id>`` tells whether a request
answered 503 was carried out after all (nothing listed: it was not)."""

from cyborg_like.cli import common

COLUMNS = ('created_at', 'request_id', 'method', 'user_id', 'project_id',
           'target')
LONG_COLUMNS = COLUMNS + ('written', 'uuid')
SORT_KEYS = ('created_at',)


class ListChange(common.Lister):
    """List the change log."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--request-id', metavar='<request-id>',
                            help='Only the changes of this API request')
        parser.add_argument('--target', metavar='<id>',
                            help='Only changes naming or creating this id')
        parser.add_argument('--method', metavar='<method>',
                            help='Only changes of this conductor call '
                                 '(create_arqs, bind_arqs, ...)')
        parser.add_argument('--project', metavar='<project-id>',
                            help="Only changes by this project's users "
                                 '(admin)')
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(request_id=args.request_id, target=args.target,
                      method=args.method, project_id=args.project)
        found = self.api.list('/changes', 'changes', params, all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)
