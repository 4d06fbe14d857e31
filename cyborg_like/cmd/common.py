"""What every console script does first: config, logging, RPC."""

from oslo_log import log as logging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

logging.register_options(CONF)
rpc.register_opts(CONF)

# Where oslo.config looks when no --config-file is given (project
# cyborg_like): the first cyborg_like.conf (and <command>.conf) found in
# these directories, and a cyborg_like.conf.d directory beside it.
SEARCHED = ('~/.cyborg_like/', '~/', '/etc/cyborg_like/', '/etc/')
SAMPLE = 'share/cyborg_like/cyborg_like.conf.sample'


def epilog(options=()):
    """The end of ``--help``: where config files are looked for and the
    ``(group, name)`` options that matter most to this command."""
    from cyborg_like import version
    files = 'Config files: --config-file FILE (repeatable) and ' \
            '--config-dir DIR, else the first cyborg_like.conf found in %s ' \
            '(/etc/cyborg_like/cyborg_like.conf for a service).' \
            % ', '.join(SEARCHED)
    listed = '; '.join(_describe(group, name) for group, name in options)
    return '%s%s Every option: %s of the installed package (version %s).' % (
        files, ' Options that matter: %s.' % listed if listed else '',
        SAMPLE, version.version_string())


def _describe(group, name):
    # Before the command line is parsed, an option reads as its default.
    default = getattr(CONF[group] if group else CONF, name)
    shown = '' if default in (None, '', []) else ' = %s' % (
        ','.join(default) if isinstance(default, list) else default)
    return '[%s] %s%s' % (group or 'DEFAULT', name, shown)


def prepare(argv, config_files=None, defaults=None, description=None,
            options=()):
    """Parse the command line and config files; set up logging and RPC.

    ``defaults`` are (group, name, value) overrides of option defaults,
    applied before the files are read, so files still win. ``description``
    (one line) and ``options`` (the (group, name) that matter) are shown by
    ``--help``.
    """
    from cyborg_like import version
    logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                         + ['stevedore=WARN', 'futurist=WARN',
                            'alembic=WARN'])
    for group, name, value in defaults or ():
        CONF.set_default(name, value, group=group)
    CONF(argv, project='cyborg_like', default_config_files=config_files,
         version=version.version_string(), description=description,
         epilog=epilog(options))
    logging.setup(CONF, 'cyborg_like')
    rpc.init(CONF)
    return CONF


def require_database(conf, command):
    """Exit with one line, not a traceback, when no database is set."""
    from cyborg_like.db import api  # noqa: F401  registers [database]
    if conf.database.connection:
        return
    read = ', '.join(conf.config_file) or 'none found'
    raise SystemExit(
        '%s: no database: set [database] connection in '
        '/etc/cyborg_like/cyborg_like.conf or a file given with '
        '--config-file (config files read: %s)' % (command, read))
