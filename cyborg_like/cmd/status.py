"""cyborg-like-status upgrade check: is this deployment ready to upgrade?

Run it where the conductor runs (it reads [database]) before and after an
upgrade, as OpenStack services' *-status commands are run.
"""

import sys

from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck

from cyborg_like.conf import CONF

Code = upgradecheck.Code
Result = upgradecheck.Result


class Checks(upgradecheck.UpgradeCommands):

    def _check_schema(self):
        from cyborg_like.db import migration
        try:
            current = migration.version()
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot read the database: %s'
                          % error)
        if current != migration.head():
            return Result(Code.FAILURE, 'The database schema is at %s, the '
                          'code needs %s: run "cyborg-like-dbsync upgrade".'
                          % (current, migration.head()))
        return Result(Code.SUCCESS)

    def _check_hosts(self):
        from cyborg_like.db import hosts
        try:
            listed = hosts.list_hosts(CONF.conductor.host_down_after)
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot read the hosts: %s' % error)
        down = [h['hostname'] for h in listed if h['state'] == 'down']
        if down:
            return Result(Code.WARNING, 'Agents not heartbeating (their '
                          'devices are not bound): %s' % ', '.join(down))
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Agents heartbeating', _check_hosts),
        ('Policy file', (common_checks.check_policy_json,
                         {'conf': CONF})),
    )


def main():
    from cyborg_like.api import policy  # noqa: F401  registers [oslo_policy]
    from cyborg_like.cmd import common  # noqa: F401  library options
    from cyborg_like.db import api  # noqa: F401  registers [database]
    return upgradecheck.main(CONF, project='cyborg_like',
                             upgrade_command=Checks(), argv=sys.argv[1:])
