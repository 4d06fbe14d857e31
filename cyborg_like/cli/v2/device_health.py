"""Health and utilization of a device, now and recent readings
(``/v2/devices/{uuid}/health``)."""

import argparse

from cyborg_like.cli import common

HISTORY_COLUMNS = ('recorded_at', 'healthy', 'utilization')
DEFAULT_HISTORY = 60
MAX_HISTORY = 1000


def _history_count(text):
    count = int(text)
    if not 0 <= count <= MAX_HISTORY:
        raise argparse.ArgumentTypeError(
            'give a count from 0 to %d' % MAX_HISTORY)
    return count


class ShowDeviceHealth(common.ShowOne):
    """Show the latest health and utilization of a device."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The device')
        return parser

    def take_action(self, args):
        health = self.api.get('/devices/%s/health' % args.uuid,
                              {'history': '0'})
        return common.one(health, hidden=('history',))


class ListDeviceHealthHistory(common.Lister):
    """List the recent health and utilization readings of a device, newest
    first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The device')
        parser.add_argument(
            '--limit', type=_history_count, default=DEFAULT_HISTORY,
            metavar='<count>',
            help='How many readings (0 to %d; default %d)'
                 % (MAX_HISTORY, DEFAULT_HISTORY))
        return parser

    def take_action(self, args):
        health = self.api.get('/devices/%s/health' % args.uuid,
                              {'history': str(args.limit)})
        return common.rows(health['history'], HISTORY_COLUMNS)
