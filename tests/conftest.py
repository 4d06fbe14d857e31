from cyborg_like.cmd import common  # noqa: F401  registers library options
from cyborg_like.conf import CONF

# Tests read no config file; each test overrides what it needs.
CONF([], project='cyborg_like', default_config_files=[])

# The random order and the xdist groups of every suite.
from tests.ordering import pytest_addoption  # noqa: E402,F401
from tests.ordering import pytest_collection_modifyitems  # noqa: E402,F401
from tests.ordering import pytest_configure  # noqa: E402,F401
from tests.ordering import pytest_configure_node  # noqa: E402,F401
from tests.ordering import pytest_report_header  # noqa: E402,F401
from tests.ordering import pytest_terminal_summary  # noqa: E402,F401
