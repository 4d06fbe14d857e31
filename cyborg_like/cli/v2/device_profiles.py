"""Device profiles: named requirements accelerator requests are made from
(``/v2/device_profiles``)."""

import argparse

from cyborg_like.cli import common

COLUMNS = ('uuid', 'name', 'description', 'groups')
LONG_COLUMNS = COLUMNS + ('created_at', 'updated_at')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'name')


def _group(text):
    """'resources:FPGA=1,trait:CUSTOM_X=required' as a dict."""
    group = {}
    for pair in text.split(','):
        key, sep, value = pair.partition('=')
        if not sep or not key.strip() or not value.strip():
            raise argparse.ArgumentTypeError(
                'a group is KEY=VALUE[,KEY=VALUE...], not %r' % text)
        group[key.strip()] = value.strip()
    return group


class ListDeviceProfile(common.Lister):
    """List device profiles."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', metavar='<name>[,<name>...]',
                            help='Only the profiles of these names')
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params['name'] = args.name
        found = self.api.list('/device_profiles', 'device_profiles', params,
                              all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowDeviceProfile(common.ShowOne):
    """Show a device profile, by uuid or by name."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profile', metavar='<uuid-or-name>')
        return parser

    def take_action(self, args):
        found = self.api.get('/device_profiles/%s' % args.profile)
        return common.one(found['device_profile'])


class CreateDeviceProfile(common.ShowOne):
    """Create a device profile."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>')
        parser.add_argument(
            '--group', dest='groups', action='append', type=_group,
            required=True, metavar='<key=value[,key=value...]>',
            help='A group of the profile, e.g. '
                 '"resources:FPGA=1,trait:CUSTOM_FPGA_INTEL_N3000=required,'
                 'accel:bitstream_id=bs-crypto-1"; repeat for more groups')
        parser.add_argument('--description', metavar='<text>')
        return parser

    def take_action(self, args):
        body = {'name': args.name, 'groups': args.groups}
        if args.description is not None:
            body['description'] = args.description
        return common.one(self.api.post('/device_profiles', body))


class DeleteDeviceProfile(common.Command):
    """Delete device profiles, by uuid or by name."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profiles', metavar='<uuid-or-name>', nargs='+')
        return parser

    def take_action(self, args):
        common.delete_each(
            lambda name: self.api.delete('/device_profiles/%s' % name),
            args.profiles, 'device profile')
