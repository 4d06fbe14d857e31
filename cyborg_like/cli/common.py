"""What the commands share: their client, list paging options, and the
conversion of API records to cliff rows (dicts and lists stay structured
in ``-f json``/``yaml`` and print as ``key='value'`` text in tables)."""

import logging

from cliff import command
from cliff import lister
from cliff import show
from osc_lib.cli import format_columns
from osc_lib import exceptions as osc_exc

LOG = logging.getLogger(__name__)

# Not shown: every record has them and they only repeat the URL.
HIDDEN = ('links',)


class ClientMixin:
    @property
    def api(self):
        return self.app.client_manager.accel_like


class Command(ClientMixin, command.Command):
    pass


class Lister(ClientMixin, lister.Lister):
    pass


class ShowOne(ClientMixin, show.ShowOne):
    pass


def cell(value):
    if isinstance(value, dict):
        return format_columns.DictColumn(value)
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return format_columns.ListDictColumn(value)
        return format_columns.ListColumn(value)
    return value


def row(item, columns):
    return tuple(cell(item.get(c)) for c in columns)


def rows(items, columns):
    return columns, [row(item, columns) for item in items]


def one(item, hidden=HIDDEN):
    """(columns, values) of one record: every field but ``hidden``."""
    columns = tuple(k for k in item if k not in hidden)
    return columns, row(item, columns)


def add_paging(parser, sort_keys):
    parser.add_argument(
        '--limit', type=int, metavar='<count>',
        help='Show one page of at most <count> items (the service cuts it '
             'to its [api] max_limit); default: every item, page by page')
    parser.add_argument(
        '--marker', metavar='<uuid>',
        help='Start after the item <uuid> (the last of the previous page)')
    parser.add_argument('--sort-key', choices=sort_keys,
                        help='Sort by this field (default: created_at)')
    parser.add_argument('--sort-dir', choices=('asc', 'desc'),
                        help='Sort direction (default: asc)')
    return parser


def paging(args):
    """The query parameters of the paging options, and whether to follow
    the pages (only when no --limit asked for one page)."""
    params = {'limit': args.limit, 'marker': args.marker,
              'sort_key': args.sort_key, 'sort_dir': args.sort_dir}
    return params, args.limit is None


def key_value(text):
    """An argparse type: ``KEY=VALUE`` as (key, value)."""
    key, sep, value = text.partition('=')
    if not sep or not key:
        raise osc_exc.CommandError('Expected KEY=VALUE, not %r' % text)
    return key, value


def add_long(parser):
    parser.add_argument('--long', action='store_true',
                        help='Show every field')
    return parser


def delete_each(delete, names, what):
    """Call ``delete(name)`` for every name, going on past failures (as
    openstackclient does); one error naming them all at the end."""
    failed = []
    for name in names:
        try:
            delete(name)
        except osc_exc.CommandError as exc:
            LOG.error('Cannot delete %s %s: %s', what, name, exc)
            failed.append(name)
    if failed:
        raise osc_exc.CommandError('%d of %d %ss not deleted: %s' % (
            len(failed), len(names), what, ', '.join(failed)))
