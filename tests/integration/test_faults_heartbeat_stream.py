"""The heartbeat stream on a real broker, as real processes.

* The conductor stopped for a while: the agent's beats wait in the
  stream's queue (the agent logs nothing: the broker took them); the
  conductor, started again, drops those past their deadline (two
  heartbeat intervals), counts them, and the host shows a fresh beat.
* The same with the broker policy of tools/set-heartbeat-stream-policy.sh
  on the vhost: the broker drops the beats beyond its bounds itself.
* Two conductors share the stream's one queue; one is killed (SIGKILL):
  the other takes every beat from then on, so the host never goes down
  (were beats aimed at one conductor, those would be lost with it).
"""

import os
import re
import subprocess
import time

import pytest

from .infra import Deployment
from .infra import HEARTBEAT_INTERVAL
from .infra import LIVENESS
from .infra import fresh_database
from .infra import rabbitmq_vhost
from .infra import utcnow
from .infra import wait_for

pytestmark = pytest.mark.integration

BACKEND = 'mariadb'
# Beats are worth two intervals: this leaves several stale in the queue.
CONDUCTOR_AWAY = 6 * HEARTBEAT_INTERVAL
# LIVENESS's [conductor] host_down_after.
HOST_DOWN_AFTER = 4
DROPPED = re.compile(r'Dropped (\d+) heartbeat\(s\) that waited in the '
                     r'heartbeat stream')


def _beat_age(dep):
    row = dep.host_row()
    if row is None or row['last_heartbeat'] is None:
        return None
    return (utcnow() - row['last_heartbeat']).total_seconds()


POLICY_SCRIPT = os.path.join(os.path.dirname(__file__), '..', '..', 'tools',
                             'set-heartbeat-stream-policy.sh')
# The broker keeps at most this many beats under the policy.
POLICY_MAX_LENGTH = 2


def _dropped(log, offset):
    return sum(int(n) for n in DROPPED.findall(log.read_log(offset)))


@pytest.mark.parametrize('broker_policy', [False, True],
                         ids=['no-policy', 'policy'])
def test_beats_stale_in_the_queue_are_dropped(tmp_path, broker_policy):
    with rabbitmq_vhost() as transport_url, \
            fresh_database(BACKEND) as db_url:
        if broker_policy:
            subprocess.run([POLICY_SCRIPT, transport_url.rsplit('/', 1)[1],
                            str(POLICY_MAX_LENGTH), '60000'], check=True,
                           timeout=60)
        dep = Deployment(BACKEND, str(tmp_path), transport_url, db_url)
        try:
            dep.dbsync('upgrade')
            dep.start()
            dep.wait_host_up()
            log = dep.services['conductor']
            dep.stop('conductor')
            offset = log.log_size()
            time.sleep(CONDUCTOR_AWAY)
            dep.start('conductor')
            # A fresh beat written: the queue is first in, first out, so
            # the conductor has been through what waited before it.
            wait_for(lambda: _beat_age(dep) < 2 * HEARTBEAT_INTERVAL + 1,
                     timeout=10, message='No fresh heartbeat was written')
            dropped = _dropped(log, offset)
            if broker_policy:
                # The broker kept the newest POLICY_MAX_LENGTH beats (of
                # which the conductor may find some stale).
                assert dropped <= POLICY_MAX_LENGTH, log.read_log()
            else:
                # ~CONDUCTOR_AWAY beats were sent; the last two may be
                # fresh.
                assert dropped >= CONDUCTOR_AWAY - 3, log.read_log()
            agent_log = dep.services['agent'].read_log()
            assert 'Traceback' not in agent_log, agent_log
            assert not re.search(r' ERROR ', agent_log), agent_log
        except BaseException:
            dep.print_logs()
            raise
        finally:
            dep.close()


def test_a_killed_conductor_leaves_the_stream_to_the_other(tmp_path):
    with rabbitmq_vhost() as transport_url, \
            fresh_database(BACKEND) as db_url:
        dep = Deployment(BACKEND, str(tmp_path), transport_url, db_url,
                         conductors=2, extra_config=LIVENESS)
        try:
            dep.dbsync('upgrade')
            dep.start()
            dep.wait_host_up()
            dep.services['conductor'].kill()
            # Were the killed conductor's share of the beats lost, the
            # host would go down. Watch it for a while.
            watched_until = time.monotonic() + 10
            worst = 0.0
            while time.monotonic() < watched_until:
                worst = max(worst, _beat_age(dep))
                time.sleep(0.2)
            assert worst < HOST_DOWN_AFTER, worst
        except BaseException:
            dep.print_logs()
            raise
        finally:
            dep.close()
