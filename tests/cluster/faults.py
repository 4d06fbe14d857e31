"""What the fault tests of the clusters share: a cloud configured as an
operator would on them, a node killed under the load of load.py and
brought back, and the checks of the rows after.

The cloud: two conductors writing through the Galera proxy (or each
through a node of its own), the fake-driver agent with GPUS GPUs, the API
as two processes (gunicorn workers); transport_url lists the three
RabbitMQ nodes; liveness short (infra.LIVENESS) and answers bounded
(cuts.CONFIG). The fault strikes under the bind load of load.py and a
bitstream rollout over four FPGA regions started just before it.
"""

import contextlib
import json
import os
import socket
import time

import requests
import sqlalchemy as sa

from harness.infra import wait_for
from tests.integration import cuts
from tests.integration.infra import JSON_HEADERS
from tests.integration.infra import Deployment
from tests.integration.infra import LIVENESS
from tests.integration.infra import started

from .cluster import CLUSTER_CONFIG
from .load import BITSTREAMS
from .load import PROFILE
from .load import REGIONS
from .load import ROLLOUT
from .load import BindLoad
from .load import inventory

GPUS = 3
WARM_ANSWERS = 20       # 2xx answers of the load before the kill, and after
API_PROCESSES = 2
RECOVERY_BOUND = 45.0   # the first 2xx after the revive, at the latest
# A conductor or agent that lost its database or broker must beat again.
BEAT_BOUND = 30.0
# The rollout started before the fault ends after it, at the latest.
ROLLOUT_BOUND = 120.0


@contextlib.contextmanager
def cloud(clusters, workdir, conductor_nodes=(0, 0)):
    """The cloud on the clusters; ``conductor_nodes``: the Galera node
    each conductor writes through (0: the proxy, as operators run it)."""
    bitstreams = os.path.join(workdir, 'bitstreams')
    os.makedirs(bitstreams)
    for name, content in BITSTREAMS.items():
        with open(os.path.join(bitstreams, name), 'w') as f:
            f.write(content)
    with clusters.vhost() as transport_url, clusters.database() as url:
        first, second = conductor_nodes
        devices = inventory(GPUS)
        dep = Deployment(
            'mariadb', workdir, transport_url, url(first), conductors=2,
            inventory=devices,
            extra_config=(CLUSTER_CONFIG + LIVENESS + cuts.CONFIG
                          + '[rollouts]\ninterval = 0.5\n'),
            agent_config='[agent]\nbitstream_dir = %s\n' % bitstreams,
            service_config={'conductor2': '[database]\nconnection = %s\n'
                            % url(second)})
        count = len(devices['devices'])
        with started(dep, lambda found: len(found) == count):
            dep.switch_api(gunicorn_workers=API_PROCESSES)
            dep.wait_host_up()
            dep.call('POST', '/v2/device_profiles', {
                'name': PROFILE, 'groups': [{'resources:PGPU': '1'}]}, 201)
            yield dep


def under_load(dep, kill, revive, down_port):
    """Run the load, ``kill()`` a node, and ``revive()`` it once the
    fault took hold (the node's ``down_port`` no longer answers: killed,
    or paused by pause_minority) and the load has had WARM_ANSWERS
    answers of requests sent since; return the load (stopped, drained),
    whether it drained, and the figures measured (what ``kill`` returns
    among them, as ``at_kill``)."""
    load = BindLoad(dep, ['gpu%d' % i for i in range(GPUS)]).start()
    try:
        # Warm: the load has completed binds before the fault.
        wait_for(lambda: len(load.ok()) >= WARM_ANSWERS,
                 timeout=RECOVERY_BOUND, message='the load never ran')
        rollout = dep.call('POST', '/v2/rollouts', ROLLOUT, 201,
                           timeout=30).json()['uuid']
        killed_at = time.monotonic()
        at_kill = kill()
        wait_for(lambda: not _listening(down_port), timeout=RECOVERY_BOUND,
                 message='the fault never took port %d down' % down_port)
        wait_for(lambda: len([a for a in load.answers
                              if a['at'] >= killed_at]) >= WARM_ANSWERS,
                 timeout=RECOVERY_BOUND,
                 message='the load got no answers through the fault')
        revive_started = time.monotonic()
        revive()
        revived_at = time.monotonic()
        wait_for(lambda: any(a['kind'] == 'create' for a in
                             load.ok(since=revived_at)),
                 timeout=RECOVERY_BOUND,
                 message='no ARQ created after the node came back')
        recovered_at = min(a['at'] + a['elapsed'] for a in load.ok(
            since=revived_at) if a['kind'] == 'create')
        # Steady again: more binds complete after the recovery.
        wait_for(lambda: len(load.ok(since=recovered_at)) >= WARM_ANSWERS,
                 timeout=RECOVERY_BOUND,
                 message='the load did not go on after the recovery')
    finally:
        load.stop()
    drained = load.drain()
    wait_for(lambda: _rollout(dep, rollout)['state'] != 'running',
             timeout=ROLLOUT_BOUND, message='the rollout never ended')
    window = load.window(killed_at)
    figures = {
        'at_kill': at_kill, 'answers': len(load.answers), 'ok': len(load.ok()),
        'answered_503': len(load.refused()),
        'unexpected': len(load.unexpected()),
        'seconds_503_from_kill': window and [round(w, 1) for w in window],
        'revive_seconds': round(revived_at - revive_started, 1),
        'first_create_after_revive_s': round(recovered_at - revived_at, 1),
        'rollout': {key: value for key, value in _rollout(
            dep, rollout).items() if key in ('state', 'targets')},
    }
    return load, drained, figures


def _listening(port):
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(('127.0.0.1', port)) == 0


def _rollout(dep, uuid):
    """The rollout, asked again while the API answers 503 just after the
    fault (a read: asking twice changes nothing)."""
    found = []

    def answered():
        resp = requests.get(dep.api_url + '/v2/rollouts/%s' % uuid,
                            headers=JSON_HEADERS, timeout=30)
        if resp.status_code == 503:
            return None
        assert resp.status_code == 200, resp.text
        found.append(resp.json())
        return True
    wait_for(answered, timeout=RECOVERY_BOUND,
             message='GET of the rollout kept answering 503')
    return found[0]


def check_rows(dep, load, drained, figures, killed=()):
    """Every 2xx applied once, nothing answered 503 applied, no row left
    in a state nobody moves on, the rollout carried through the fault,
    every process but the ``killed`` services still the one started."""
    assert not load.unexpected(), load.unexpected()[:5]
    assert drained, 'ARQs could not be deleted after the fault'
    _regions_hold(dep, figures['rollout'])
    refused = {a['request_id'] for a in load.refused()
               if a['method'] != 'GET'}
    ok_writes = [a for a in load.ok() if a['method'] != 'GET']
    with dep.engine.connect() as conn:
        arqs = conn.execute(sa.text(
            'SELECT uuid, state FROM extended_accelerator_requests')).all()
        # Nothing a conductor drives is left half way: every operation in
        # a state its machine ends in; no target of the (ended) rollout
        # under way (those of a rollout that failed before reaching them
        # stay pending: never begun).
        unfinished = conn.execute(sa.text(
            "SELECT 'operation', type, state FROM operations WHERE state "
            "NOT IN ('succeeded', 'failed', 'cancelled') UNION ALL "
            "SELECT 'rollout target', target_uuid, state FROM "
            "rollout_targets WHERE state IN ('in_progress', 'gating', "
            "'rolling_back')")).all()
        in_use = conn.execute(sa.text(
            'SELECT COUNT(*) FROM attach_handles WHERE in_use')).scalar()
        changes = {}
        for request_id, count in conn.execute(sa.text(
                'SELECT request_id, COUNT(*) FROM changes '
                'GROUP BY request_id')):
            changes[request_id] = count
    # Every ARQ answered 201 was deleted (2xx): none may be left, and
    # none answered 503 may exist.
    assert arqs == [], _ghosts(dep, load, arqs)
    assert in_use == 0, 'attach handles left in use'
    assert unfinished == [], unfinished
    ghosts = refused & set(changes)
    assert not ghosts, ('writes answered 503 were applied',
                        _logged(dep, load, ghosts))
    # The change log has each write answered 2xx once: not lost, not
    # applied twice by a retry.
    counts = {}
    for answer in ok_writes:
        counts.setdefault(answer['kind'], []).append(
            changes.get(answer['request_id'], 0))
    for kind in ('create', 'delete'):
        assert set(counts.get(kind, [1])) == {1}, (kind, counts[kind])
    for name, service in dep.services.items():
        assert service.running or name in killed, '%s died' % name
    _beating(dep, [dep.conductor_hosts[name] for name in killed
                   if name in dep.conductor_hosts])
    return {kind: dict(sorted({n: c.count(n) for n in set(c)}.items()))
            for kind, c in counts.items()}


# What every region holds once the rollout ended: the new bitstream, or
# the old one again (the fault failed a target; the rollout rolled back).
HELD_AFTER = {'succeeded': 'bs-new', 'failed': 'bs-old'}


def _regions_hold(dep, rollout):
    """The rollout ended, and every region holds what its end says, as
    the agent reads it back (no job of a failed operation ran last)."""
    assert rollout['state'] in HELD_AFTER, rollout
    expected = HELD_AFTER[rollout['state']]
    held = []

    def consistent():
        with dep.engine.connect() as conn:
            held[:] = conn.execute(sa.text(
                "SELECT name, bitstream_id FROM deployables "
                "WHERE name LIKE 'region%'")).all()
        return all(b == expected for _name, b in held) or None
    try:
        wait_for(consistent, timeout=BEAT_BOUND,
                 message='regions after a %s rollout' % rollout['state'])
    except Exception:
        raise AssertionError(('regions after the rollout', rollout,
                              held)) from None
    assert len(held) == REGIONS, held


def _logged(dep, load, request_ids):
    """The answers to these requests and the conductors' log lines of
    them."""
    lines = [line for name in dep.conductor_names
             for line in dep.services[name].read_log().splitlines()
             if any(r in line for r in request_ids)]
    return ([(a['kind'], a['status'], round(a['elapsed'], 2),
              a['request_id']) for a in load.answers
             if a['request_id'] in request_ids], lines[:20])


def _ghosts(dep, load, arqs):
    """What the rows and the answers say of ARQs left behind."""
    found = []
    with dep.engine.connect() as conn:
        for arq in arqs:
            logged = conn.execute(sa.text(
                'SELECT request_id, method, created_at FROM changes '
                'WHERE target LIKE :t'), {'t': '%%%s%%' % arq.uuid}).all()
            found.append({'arq': tuple(arq), 'changes': [
                (tuple(row), [(a['kind'], a['status'],
                               round(a['elapsed'], 2)) for a in load.answers
                              if a['request_id'] == row.request_id])
                for row in logged]})
    return found


def _beating(dep, dead_conductors):
    """The conductors left and the agent's host beat again (the processes
    recovered without a restart)."""
    def fresh():
        with dep.engine.connect() as conn:
            stale = conn.execute(sa.text(
                'SELECT hostname FROM conductors WHERE last_heartbeat < '
                'UTC_TIMESTAMP() - INTERVAL 5 SECOND UNION ALL '
                'SELECT hostname FROM hosts WHERE last_heartbeat < '
                'UTC_TIMESTAMP() - INTERVAL 10 SECOND')).scalars().all()
            return not set(stale) - set(dead_conductors) or None
    wait_for(fresh, timeout=BEAT_BOUND,
             message='a conductor or the host does not beat again')


def report(name, figures, changes):
    print('\n%s: %s' % (name, json.dumps(dict(figures,
                                                 changes_per_write=changes))))
