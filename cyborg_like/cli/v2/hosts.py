"""Hosts: the compute hosts with an agent, up or down (``/v2/hosts``)."""

from cyborg_like.cli import common

COLUMNS = ('hostname', 'state', 'last_heartbeat', 'agent_version')
LONG_COLUMNS = COLUMNS + ('inventory_hash',)


class ListHost(common.Lister):
    """List hosts, up or down, with their last heartbeat."""

    def get_parser(self, prog_name):
        return common.add_long(super().get_parser(prog_name))

    def take_action(self, args):
        hosts = self.api.get('/hosts')['hosts']
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
