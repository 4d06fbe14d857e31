from cyborg_like.cmd import common  # noqa: F401  registers library options
from cyborg_like.conf import CONF

# Tests read no config file; each test overrides what it needs.
CONF([], project='cyborg_like', default_config_files=[])
