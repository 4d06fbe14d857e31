"""Free, used and reserved accelerators (``/v2/availability``), of this
region or, with ``--all-regions``, of every region of the Keystone catalog
that has the accelerator service, merged into one table (each group keeps
its ``site``)."""

import argparse

from cyborg_like.cli import client
from cyborg_like.cli import common
from cyborg_like.common import availability

COUNTS = ('total', 'used', 'reserved', 'free')


def _dimensions(text):
    asked = [d for d in text.split(',') if d]
    if not asked or set(asked) - set(availability.DIMENSIONS):
        raise argparse.ArgumentTypeError(
            'give dimensions among %s' % ', '.join(availability.DIMENSIONS))
    return list(dict.fromkeys(asked))


def merge(feeds):
    """One feed's groups per region -> the groups of all, with the same
    site and dimensions summed (two regions may share a site), in the
    order the regions gave them."""
    merged = {}
    for groups in feeds:
        for group in groups:
            key = tuple(sorted((k, repr(v)) for k, v in group.items()
                               if k not in COUNTS))
            into = merged.setdefault(key, dict(
                {k: v for k, v in group.items() if k not in COUNTS},
                **dict.fromkeys(COUNTS, 0)))
            for name in COUNTS:
                into[name] += group[name]
    return list(merged.values())


class ShowAvailability(common.Lister):
    """Show free, used and reserved accelerators by resource class, model
    and host."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--group-by', type=_dimensions, metavar='<dims>',
            default=list(availability.DEFAULT_GROUP_BY),
            help='Comma-separated dimensions among %s (default %s)' % (
                ', '.join(availability.DIMENSIONS),
                ','.join(availability.DEFAULT_GROUP_BY)))
        parser.add_argument(
            '--at', metavar='<time>',
            help='As it will be at this time (ISO 8601, UTC unless an '
                 'offset is given): devices in a lease window then count '
                 'as reserved')
        parser.add_argument(
            '--all-regions', action='store_true',
            help='Ask every region of the catalog that has the %s service '
                 'and merge their feeds' % client.SERVICE_TYPE)
        return parser

    def take_action(self, args):
        params = {'group_by': ','.join(args.group_by)}
        if args.at:
            params['at'] = args.at
        if args.all_regions:
            feeds = [self._client(url).get('/availability', params)['groups']
                     for url in self._region_endpoints()]
        else:
            feeds = [self.api.get('/availability', params)['groups']]
        columns = ('site',) + tuple(args.group_by) + COUNTS
        return common.rows(merge(feeds), columns)

    def _region_endpoints(self):
        manager = self.app.client_manager
        catalog = manager.auth_ref.service_catalog
        urls = catalog.get_urls(service_type=client.SERVICE_TYPE,
                                interface=manager.interface or 'public')
        return sorted(set(urls))

    def _client(self, url):
        return client.Client(self.api.session, url, self.api.api_version)
