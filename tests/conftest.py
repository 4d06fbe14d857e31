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


def pytest_make_parametrize_id(config, val, argname):
    """No ':' in a test id: gabbi's pytest plugin takes every item whose
    name holds one for a gabbi test and stops the whole run (a KeyError
    in its collection hook; CI runs 18 and 20)."""
    if isinstance(val, str) and ':' in val:
        return val.replace(':', '.')
    return None
