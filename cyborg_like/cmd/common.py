"""What every console script does first: config, logging, RPC."""

from oslo_log import log as logging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

logging.register_options(CONF)
rpc.register_opts(CONF)


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
