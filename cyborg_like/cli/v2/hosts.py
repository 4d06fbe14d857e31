"""Hosts: the compute hosts with an agent, up or down (``/v2/hosts``)."""

from osc_lib import exceptions as osc_exc

from cyborg_like.cli import common

COLUMNS = ('hostname', 'state', 'last_heartbeat', 'agent_version')
LONG_COLUMNS = COLUMNS + ('inventory_hash', 'labels', 'aggregates')


class ListHost(common.Lister):
    """List hosts, up or down, with their last heartbeat."""

    def get_parser(self, prog_name):
        return common.add_long(super().get_parser(prog_name))

    def take_action(self, args):
        hosts = self.api.list('/hosts', 'hosts')
        return common.rows(hosts, LONG_COLUMNS if args.long else COLUMNS)


class ShowHost(common.ShowOne):
    """Show one host and the devices on it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hostname', metavar='<hostname>')
        return parser

    def take_action(self, args):
        host = dict(self.api.get('/hosts/%s' % args.hostname))
        devices = self.api.list('/devices', 'devices',
                                {'hostname': args.hostname})
        host['devices'] = ['%s %s %s' % (d['uuid'], d['type'], d['model'])
                           for d in devices]
        return common.one(host)


class SetHost(common.ShowOne):
    """Set or remove a host's labels (rollouts select hosts by them:
    rollout create --label KEY=VALUE)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hostname', metavar='<hostname>')
        parser.add_argument('--label', metavar='<key=value>',
                            action='append', default=[],
                            type=common.key_value,
                            help='Set a label; repeatable')
        parser.add_argument('--unset-label', metavar='<key>',
                            action='append', default=[],
                            help='Remove a label; repeatable')
        return parser

    def take_action(self, args):
        labels = dict(args.label)
        labels.update((key, None) for key in args.unset_label)
        if not labels:
            raise osc_exc.CommandError(
                'Nothing to change: give --label or --unset-label.')
        return common.one(self.api.patch('/hosts/%s' % args.hostname,
                                         {'labels': labels}))
