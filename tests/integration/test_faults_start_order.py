"""Services started in any order, as real processes.

The agent (and the API) start before any conductor: the agent retries its
first report with a short capped backoff, logging one warning line per try
and no traceback, and the devices appear within a few seconds of the
conductor starting (they used to appear a whole discovery interval late,
after a 40-line traceback). Run with ``-s`` to see the measured times.
"""

import time

import pytest

from .infra import BASE_INVENTORY
from .infra import CEILING_FACTOR
from .infra import CONDUCTOR_TIMEOUT
from .infra import Deployment
from .infra import fresh_database
from .infra import rabbitmq_vhost

pytestmark = pytest.mark.integration

BACKEND = 'mariadb'
# Long enough for several first-report tries without a conductor.
CONDUCTOR_LATE_BY = 8.0
# A try waits at most [agent] report_timeout (here CONDUCTOR_TIMEOUT) for
# a conductor, then pauses at most [agent] first_report_max_interval (2 s):
# the design value. The test fails past CEILING_FACTOR times it (a loaded
# machine is slow, not wrong) and prints what it measured.
APPEAR_DESIGN = CONDUCTOR_TIMEOUT + 2.0 + 2.0
APPEAR_BOUND = CEILING_FACTOR * APPEAR_DESIGN
# Discovery far longer than the test: only the first-report retry can
# bring the devices in time.
DISCOVERY_INTERVAL = 300


def _device_count(dep):
    resp = dep.get('/v2/devices', timeout=CONDUCTOR_TIMEOUT + 10)
    return len(resp.json()['devices']) if resp.status_code == 200 else None


def test_agent_before_conductor(tmp_path):
    with rabbitmq_vhost() as transport_url, \
            fresh_database(BACKEND) as db_url:
        dep = Deployment(
            BACKEND, str(tmp_path), transport_url, db_url,
            agent_config='[agent]\ndiscovery_interval = %d\n'
                         % DISCOVERY_INTERVAL)
        try:
            dep.dbsync('upgrade')
            dep.start('agent', 'api')
            time.sleep(CONDUCTOR_LATE_BY)
            assert _device_count(dep) is None    # 503: no conductor yet

            spawned = time.monotonic()
            dep.start('conductor')
            listening = time.monotonic()
            expected = len(BASE_INVENTORY['devices'])
            while _device_count(dep) != expected:
                assert time.monotonic() - listening < APPEAR_BOUND, (
                    'The devices did not appear within %.0fs of the '
                    'conductor listening' % APPEAR_BOUND)
                time.sleep(0.1)
            appeared = time.monotonic()

            log = dep.services['agent'].read_log()
            tries = log.count('No conductor took the first inventory '
                              'report')
            assert tries >= 2, log
            assert 'Traceback' not in log, log
            assert 'ERROR' not in log, log
            print('\nagent before conductor (by %.0fs): %d warning '
                  'line(s); devices visible %.2fs after the conductor '
                  'listened (%.2fs after it was spawned)' % (
                      CONDUCTOR_LATE_BY, tries, appeared - listening,
                      appeared - spawned))
        finally:
            dep.close()
