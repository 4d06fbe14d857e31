"""The lease periodic when conductors die (fault injection).

Two conductors, an agent and the API as real processes over RabbitMQ and
MariaDB/PostgreSQL, the lease periodic every second with real time.
Another project's VM holds the GPU when a lease of it is created; both
conductors are SIGKILLed once the holder was told
(``lease_starts_at``), and started again only after the window's start
plus the grace, when the unbind was due and nobody ran. The restarted
conductors find the notice in the database: no second notice, and the
holder's ARQ unbound exactly once, its handle free, after which the
lessee binds the GPU (docs/leases.md, docs/faults.md).
"""

import datetime
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from .drained import conductor_metrics_config
from .drained import series
from .infra import BACKENDS
from .infra import JSON_HEADERS
from .infra import LIVENESS
from .infra import running_deployment
from .infra import utcnow
from .infra import wait_for

pytestmark = pytest.mark.integration

GRACE_SECONDS = 3
CONFIG = LIVENESS + """
[leases]
check_interval = 1
notice_seconds = 3600
grace_seconds = %d
""" % GRACE_SECONDS
# The window starts this long after the lease is made: the notice (due at
# once) is given by then.
START_IN = 8
# Started again within a check interval; the margin covers a loaded
# 2-core CI machine.
PREEMPT_BOUND = 1 + 10
OTHER, LESSEE = 'other', 'lessee'
NOTICE_LINE = 'of another project starts at'
PREEMPT_LINE = 'its device is lent to another project'


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('leases-%s' % request.param))
    own = {name: conductor_metrics_config()
           for name in ('conductor', 'conductor2')}
    with running_deployment(
            request.param, workdir, conductors=2, extra_config=CONFIG,
            service_config={name: text for name, (text, _) in own.items()},
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        dep.metrics_urls = [url for _, url in own.values()]
        dep.wait_host_up()
        _call(dep, 'POST', '/v2/device_profiles', {
            'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]}, 201)
        yield dep


def _call(dep, method, path, body=None, expected=200, project=None,
          roles='member,reader'):
    headers = dict(JSON_HEADERS)
    if project:
        headers.update({'X-Project-Id': project, 'X-Roles': roles})
    resp = requests.request(method, dep.api_url + path, json=body,
                            headers=headers, timeout=30)
    assert resp.status_code == expected, (method, path, resp.status_code,
                                          resp.text)
    return resp.json() if resp.content else None


def _gpu(dep):
    [gpu] = _call(dep, 'GET', '/v2/deployables?name=gpu0')['deployables']
    return gpu


def _arq(dep, project):
    return _call(dep, 'POST', '/v2/accelerator_requests',
                 {'device_profile_name': 'gpu'}, 201,
                 project=project)['arqs'][0]['uuid']


def _shown(dep, arq):
    return _call(dep, 'GET', '/v2/accelerator_requests/%s' % arq)


def _bound(dep, arq):
    shown = _shown(dep, arq)
    return shown if shown['state'] in ('Bound', 'BindFailed') else None


def _releasing(dep):
    with dep.engine.connect() as conn:
        return conn.execute(sa.text(
            'SELECT count(*) FROM attach_handles WHERE release_pending = '
            ':yes'), {'yes': True}).scalar()


def _lines(dep, text):
    """How many lines of all conductors' logs (each kept across its
    restarts) say ``text``."""
    count = 0
    for name in dep.conductor_names:
        with open(dep.services[name].log_path, errors='replace') as f:
            count += sum(text in line for line in f)
    return count


def _lease_runs(dep):
    return [series(url, 'cyborg_like_lease_runs') for url in dep.metrics_urls]


def test_conductors_killed_between_notice_and_preemption(deployment):
    dep = deployment
    gpu = _gpu(dep)
    # Another project's workload holds the GPU, bound by standalone
    # scheduling: preempted by an unbind (one Nova bound is asked of Nova
    # instead, never unbound: tests/functional/test_leases.py).
    theirs = _arq(dep, OTHER)
    _call(dep, 'POST', '/v2/accelerator_requests/%s/schedule' % theirs,
          {'instance_uuid': str(uuid.uuid4())}, 202, project=OTHER)
    held = wait_for(lambda: _bound(dep, theirs))
    assert held['state'] == 'Bound', held
    assert held['device_rp_uuid'] == gpu['rp_uuid']
    [device] = [d['uuid'] for d in _call(dep, 'GET', '/v2/devices')[
        'devices'] if d['type'] == 'GPU']
    start = utcnow().replace(microsecond=0) + datetime.timedelta(
        seconds=START_IN)
    lease = _call(dep, 'POST', '/v2/leases', {
        'devices': [device], 'timezone': 'UTC',
        'start': start.isoformat(),
        'end': (start + datetime.timedelta(hours=2)).isoformat()}, 201,
        project=LESSEE, roles='admin,member,reader')   # may preempt
    told = wait_for(lambda: _shown(dep, theirs)['lease_starts_at'],
                    timeout=START_IN - 1, interval=0.2,
                    message='the holder was never told')
    assert told == start.isoformat() + '+00:00'
    wait_for(lambda: _lines(dep, NOTICE_LINE), timeout=5,
             message='no conductor logged the notice')
    for name in dep.conductor_names:
        dep.services[name].kill()
    # Nobody runs the periodic when the unbind falls due.
    due = start + datetime.timedelta(seconds=GRACE_SECONDS)
    time.sleep(max(0.0, (due - utcnow()).total_seconds()) + 1)
    with dep.engine.connect() as conn:
        # The API reads through the conductors: the database, then.
        assert conn.execute(sa.text(
            'SELECT state FROM extended_accelerator_requests '
            'WHERE uuid = :u'), {'u': theirs}).scalar() == 'Bound'
    restarted = time.monotonic()
    for name in dep.conductor_names:
        dep.services[name].start()
    wait_for(lambda: _shown(dep, theirs)['state'] == 'Unbound',
             timeout=PREEMPT_BOUND, interval=0.1,
             message='the holder was never preempted')
    print('conductors SIGKILLed between notice and preemption: unbound '
          '%.1fs after their restart' % (time.monotonic() - restarted))
    preempted = _shown(dep, theirs)
    assert 'another project' in preempted['state_reason']
    assert preempted['lease_starts_at'] is None
    # Two runs of each conductor later: one notice and one unbind in all,
    # the handle free.
    runs = _lease_runs(dep)
    wait_for(lambda: all(now >= then + 2 for now, then in zip(
        _lease_runs(dep), runs)), timeout=PREEMPT_BOUND, interval=0.2,
        message='the lease periodic did not run twice on each conductor')
    assert (_lines(dep, NOTICE_LINE), _lines(dep, PREEMPT_LINE)) == (1, 1)
    with dep.engine.connect() as conn:
        assert conn.execute(sa.text(
            'SELECT count(*) FROM extended_accelerator_requests '
            'WHERE attach_handle_id IS NOT NULL')).scalar() == 0
    # Bindable again once the agent confirmed the release.
    wait_for(lambda: _releasing(dep) == 0,
             message='the agent never confirmed the release')
    # The lessee binds the GPU in its window, by standalone scheduling.
    mine = _arq(dep, LESSEE)
    _call(dep, 'POST', '/v2/accelerator_requests/%s/schedule' % mine,
          {'instance_uuid': str(uuid.uuid4())}, 202, project=LESSEE)
    bound = wait_for(lambda: _bound(dep, mine))
    assert bound['state'] == 'Bound', bound
    assert bound['device_rp_uuid'] == gpu['rp_uuid']
    # Opened, its end not noticed yet (two hours on).
    assert _call(dep, 'GET', '/v2/leases/%s' % lease['uuid'])['window'][
        'state'] == 'open'
