"""cyborg-like-dbsync: ``upgrade [--revision R]`` or ``version``."""

import sys

from oslo_config import cfg

from cyborg_like.cmd import common
from cyborg_like.conf import CONF


DESCRIPTION = ('Create or upgrade the database schema (run where the '
               'conductor runs, before starting it).')


def _upgrade():
    from cyborg_like.db import migration
    migration.upgrade(CONF.command.revision)
    print('Database is at revision %s' % migration.version())


def _version():
    from cyborg_like.db import migration
    print(migration.version() or 'empty (run "cyborg-like-dbsync upgrade")')


def _add_parsers(subparsers):
    subparsers.required = True   # SubCommandOpt has no ``required``
    upgrade = subparsers.add_parser(
        'upgrade', help='Upgrade the schema to a revision (the newest by '
                        'default).')
    upgrade.add_argument('--revision', default='head')
    upgrade.set_defaults(func=_upgrade)
    version = subparsers.add_parser(
        'version', help='Print the revision the schema is at.')
    version.set_defaults(func=_version)


def main():
    CONF.register_cli_opt(cfg.SubCommandOpt(
        'command', title='Commands', handler=_add_parsers))
    from cyborg_like.db import api  # noqa: F401  registers [database]
    common.prepare(sys.argv[1:], description=DESCRIPTION,
                   options=(('database', 'connection'),))
    common.require_database(CONF, 'cyborg-like-dbsync')
    CONF.command.func()
