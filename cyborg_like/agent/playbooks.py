"""Where the driver playbooks are, and what to pass them.

playbooks/ holds one entry playbook per action (install.yml, remove.yml,
verify.yml) and one role per driver family; the family is chosen by the
``driver_family`` extra var (see docs/playbooks.md). An upgrade runs
install.yml at the new version. The schema of the parameters and the
stats the playbooks report are in cyborg_like.common.driver_vars.
"""

import os
import sys

from cyborg_like.common import driver_vars

_ENTRY = {driver_vars.INSTALL: 'install.yml',
          driver_vars.UPGRADE: 'install.yml',
          driver_vars.REMOVE: 'remove.yml',
          driver_vars.VERIFY: 'verify.yml'}

# A source checkout (or editable install) has playbooks/ beside the
# package; an installed package has them in its data files.
_CANDIDATES = (
    os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), 'playbooks'),
    os.path.join(sys.prefix, 'share', 'cyborg_like', 'playbooks'),
)


def playbooks_dir(root=None):
    """The playbooks/ directory: ``root`` if given, else the first found."""
    candidates = (root,) if root else _CANDIDATES
    for candidate in candidates:
        if os.path.isfile(os.path.join(candidate, 'install.yml')):
            return candidate
    raise FileNotFoundError('no playbooks directory (with install.yml) '
                            'among %s' % ', '.join(candidates))


def playbook_path(family, action, root=None):
    """Absolute path of the entry playbook that runs ``action``."""
    driver_vars.schema(family, action)  # rejects unknown names
    return os.path.join(playbooks_dir(root), _ENTRY[action])


# Re-exported for the agent's runner: one import for paths and variables.
schema = driver_vars.schema
extravars = driver_vars.extravars
STATS_KEY = driver_vars.STATS_KEY
STATS_FIELDS = driver_vars.STATS_FIELDS
