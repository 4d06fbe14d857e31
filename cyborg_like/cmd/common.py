"""What every console script does first: config, logging, RPC."""

import sys

from oslo_log import log as logging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

logging.register_options(CONF)
rpc.register_opts(CONF)


def without_sqlalchemy():
    """In a process with no database (the API), before pecan is imported.

    pecan's JSON renderer imports SQLAlchemy whenever it is installed, only
    to render SQLAlchemy result objects, which the API never has; it falls
    back to stand-ins when the import fails. That import was 12 MB of the
    API's RSS at start, 100.6 MB (see docs/benchmarks.md).
    """
    sys.modules.setdefault('sqlalchemy', None)


def prepare(argv, config_files=None, defaults=None):
    """Parse the command line and config files; set up logging and RPC.

    ``defaults`` are (group, name, value) overrides of option defaults,
    applied before the files are read, so files still win.
    """
    logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                         + ['stevedore=WARN', 'futurist=WARN',
                            'alembic=WARN'])
    for group, name, value in defaults or ():
        CONF.set_default(name, value, group=group)
    CONF(argv, project='cyborg_like', default_config_files=config_files)
    logging.setup(CONF, 'cyborg_like')
    rpc.init(CONF)
    return CONF
