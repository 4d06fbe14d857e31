"""Device leases (``/v2/leases``, docs/leases.md): lend devices to a
project for one window or recurring ones, list, show, give back early
(the lessee) and revoke (the lessor)."""

from osc_lib import exceptions as osc_exc

from cyborg_like.cli import common
from cyborg_like.common import states

PATH = '/leases'
COLUMNS = ('uuid', 'name', 'project_id', 'state', 'count', 'start', 'end',
           'timezone', 'recurrence', 'window')
LONG_COLUMNS = COLUMNS + ('resource_class', 'traits', 'devices',
                          'planned_until', 'ended_at', 'created_at')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')


def _trait(text):
    name, sep, need = text.partition('=')
    if not sep or need not in ('required', 'forbidden'):
        raise osc_exc.CommandError(
            'A trait is NAME=required or NAME=forbidden, not %r' % text)
    return name, need


class CreateLease(common.ShowOne):
    """Lease devices for a window, one-off or recurring: named devices
    (--device) or a count of a resource class with traits."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', metavar='<name>')
        parser.add_argument('--device', metavar='<uuid>', action='append',
                            dest='devices',
                            help='A device to lease (repeat for more)')
        parser.add_argument('--resource-class', metavar='<class>',
                            help='Lease --count devices of this resource '
                                 'class (e.g. PGPU)')
        parser.add_argument('--trait', metavar='<NAME=required|forbidden>',
                            action='append', type=_trait, dest='traits',
                            help='With --resource-class (repeat for more)')
        parser.add_argument('--count', type=int, metavar='<count>',
                            help='With --resource-class: how many devices')
        parser.add_argument('--start', required=True,
                            metavar='<YYYY-MM-DDTHH:MM>',
                            help='The first window starts (local time of '
                                 '--timezone)')
        parser.add_argument('--end', required=True,
                            metavar='<YYYY-MM-DDTHH:MM>',
                            help='The first window ends (local time)')
        parser.add_argument('--timezone', default='UTC', metavar='<zone>',
                            help='An IANA time zone (default: UTC)')
        parser.add_argument('--recurrence', metavar='<RRULE>',
                            help='Repeat the window by this RFC 5545 rule, '
                                 'e.g. FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR')
        return parser

    def take_action(self, args):
        body = {'start': args.start, 'end': args.end,
                'timezone': args.timezone}
        if args.devices:
            body['devices'] = args.devices
        if args.resource_class:
            body.update(resource_class=args.resource_class,
                        count=args.count or 1)
        if args.traits:
            body['traits'] = dict(args.traits)
        for key in ('name', 'recurrence'):
            if getattr(args, key):
                body[key] = getattr(args, key)
        return common.one(self.api.post(PATH, body))


class ListLease(common.Lister):
    """List leases: your project's, or every one for the lessor."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', choices=states.LEASE.states,
                            help='Only leases in this state')
        parser.add_argument('--project', metavar='<project id>',
                            help="Only this lessee's (the lessor's view)")
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(state=args.state, project_id=args.project)
        found = self.api.list(PATH, 'leases', params, all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowLease(common.ShowOne):
    """Show a lease, with its current or next window."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The lease')
        return parser

    def take_action(self, args):
        return common.one(self.api.get('%s/%s' % (PATH, args.uuid)))


class GiveBackLease(ShowLease):
    """End your lease early: its windows are cancelled and your requests
    bound to its devices in a window begun are unbound."""

    def take_action(self, args):
        return common.one(self.api.post('%s/%s/give_back'
                                        % (PATH, args.uuid)))


class DeleteLease(ShowLease):
    """Revoke a lease (the lessor): the lessee's requests bound to its
    devices in a window begun are unbound at once."""

    def take_action(self, args):
        return common.one(self.api.request(
            'DELETE', '%s/%s' % (PATH, args.uuid)).json())
