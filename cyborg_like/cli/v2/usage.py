"""Usage accounting (``/v2/usage``): device-seconds held over a period,
grouped by project, instance, resource class, model or host, counted from
the bind and unbind times the conductor records (docs/usage.md). One row
per group; ``-f csv`` or ``-f json`` for a chargeback pipeline."""

from cyborg_like.cli import common
from cyborg_like.common.usage import DIMENSIONS
# The answer's key of each dimension.
KEYS = DIMENSIONS


def group_by(text):
    """An argparse type: dimensions, comma-separated, each known."""
    names = [name for name in text.split(',') if name]
    unknown = [name for name in names if name not in DIMENSIONS]
    if unknown or not names:
        raise ValueError(text)
    return list(dict.fromkeys(names))


class ShowUsage(common.Lister):
    """Show the device-seconds held over a period, grouped."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--start', metavar='<time>',
                            help='Start of the period, ISO 8601 (UTC '
                                 'unless an offset is given; default: the '
                                 'first of this month, 00:00 UTC)')
        parser.add_argument('--end', metavar='<time>',
                            help='End of the period (default: now)')
        parser.add_argument('--project', metavar='<project-id>',
                            help='Only this project (default: your own; '
                                 "the admin's default: every project)")
        parser.add_argument('--group-by', metavar='<dimension>[,...]',
                            type=group_by, default=['project'],
                            help='Group by any of %s, comma-separated '
                                 '(default: project)' % ', '.join(DIMENSIONS))
        return parser

    def take_action(self, args):
        params = {'start': args.start, 'end': args.end,
                  'project_id': args.project,
                  'group_by': ','.join(args.group_by)}
        found = self.api.get('/usage', {k: v for k, v in params.items()
                                        if v is not None})
        columns = tuple(KEYS[name] for name in args.group_by) + (
            'device_seconds', 'device_hours', 'bindings')
        rows = [dict(row, device_hours=round(row['device_seconds'] / 3600.0,
                                             6))
                for row in found['usage']]
        return common.rows(rows, columns)
