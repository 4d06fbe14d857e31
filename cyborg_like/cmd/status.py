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

    def _check_conductors(self):
        from cyborg_like.db import conductors
        try:
            listed = conductors.list_conductors(
                CONF.conductor.service_down_after)
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot read the conductors: %s'
                          % error)
        if not any(c['state'] == 'up' for c in listed):
            return Result(Code.WARNING, 'No conductor is heartbeating: no '
                          'request can be served.')
        down = ['%s (%s)' % (c['hostname'], c['uuid']) for c in listed
                if c['state'] == 'down']
        if down:
            # A conductor killed without a clean stop keeps its row.
            return Result(Code.WARNING, 'Conductors not heartbeating (their '
                          'unfinished work has been failed): %s'
                          % ', '.join(down))
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Conductors heartbeating', _check_conductors),
        ('Agents heartbeating', _check_hosts),
        ('Policy file', (common_checks.check_policy_json,
                         {'conf': CONF})),
    )


DESCRIPTION = ('Check that this deployment is ready for an upgrade, or '
               'works after one ("upgrade check").')


def main():
    """As upgradecheck.main, with our --help and a one-line error when no
    database is configured (rather than every check failing with it)."""
    from cyborg_like import version
    from cyborg_like.api import policy  # noqa: F401  registers [oslo_policy]
    from cyborg_like.cmd import common
    from cyborg_like.db import api  # noqa: F401  registers [database]
    upgradecheck.register_cli_options(CONF, Checks())
    CONF(sys.argv[1:], project='cyborg_like', description=DESCRIPTION,
         version=version.version_string(),
         epilog=common.epilog((('database', 'connection'),)))
    try:
        common.require_database(CONF, 'cyborg-like-status')
    except SystemExit as error:
        print(error, file=sys.stderr)
        return 255      # upgradecheck's code for "the check could not run"
    return upgradecheck.run(CONF)
