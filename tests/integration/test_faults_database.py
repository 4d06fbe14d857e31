"""The database cut off from the conductor, with real processes.

The conductor's ``[database] connection`` points at a TcpProxy in front of
MariaDB or PostgreSQL (nothing else talks to the database); the API, the
conductor and the agent are processes over RabbitMQ. During the cut every
request that needs the database -- GET /v2/devices, POST
/v2/accelerator_requests, a bind PATCH -- must be answered within the bound
([api] conductor_timeout; the test fails past a ceiling of three times it,
cuts.CEILING), with 503 and Retry-After or with success; never a 500,
never a hang. After the restore the conductor must
serve again (a list, a create, a bind that completes) within a measured
recovery time, and nothing may have been written for a caller answered
503: the ARQs in the database are exactly those answered 201, quota usage
counts exactly them, an ARQ whose bind was refused is still unbound, no
handle is in use without the ARQ holding it, nothing stays BindStarted.

Cases:

* ``reset``: the database went away (connections closed, new ones
  refused); restored after the cut.
* ``blackhole``: a silent drop (connections open, nothing forwarded, new
  ones accepted and ignored). For MariaDB the restore *strands* the
  connections that were open (they stay silent for ever, as connections
  the server dropped during a partition while the client only waited): only
  ``[database] io_timeout`` (PyMySQL read_timeout/write_timeout) frees the
  conductor's threads and pooled connections (the conductor runs WORKERS
  RPC threads, which one burst fills). For PostgreSQL the restore
  closes them: libpq has no read timeout, and tcp_user_timeout and
  keepalives never fire through a loopback proxy whose TCP stack
  acknowledges everything (docs/faults.md). This case caught a bind that
  committed after its PATCH was answered 503 (now rolled back at commit:
  common/deadlines.py).

CYBORG_LIKE_DB_CUT_SECONDS (default 30) sets the cut's length,
CYBORG_LIKE_DB_IO_TIMEOUT (default 4) the conductor's io_timeout (0 shows
what happens without one), CYBORG_LIKE_DB_STRAND=1 strands PostgreSQL's
connections too. Run with ``-s`` to see the measured numbers.
"""

import concurrent.futures
import contextlib
import json
import os
import sys
import time
import uuid

import pytest
import sqlalchemy as sa

from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api

from .infra import DB_URLS
from .infra import Deployment
from .infra import all_devices
from .infra import fresh_database
from .infra import rabbitmq_vhost
from .infra import started
from .infra import wait_for
from .writes import Writes
from .cuts import BOUND
from .cuts import CEILING
from .cuts import CONFIG
from .cuts import RETRY_AFTER
from .cuts import recovery_seconds
from .cuts import summary
from .cuts import timed
from .drained import conductor_metrics_config
from .drained import wait_drained
from .tcpproxy import TcpProxy

# long: cuts of 12-30 s per case (tests/ordering.py starts it first).
pytestmark = [pytest.mark.integration, pytest.mark.long]

CUT_SECONDS = float(os.environ.get('CYBORG_LIKE_DB_CUT_SECONDS', '30'))
IO_TIMEOUT = int(os.environ.get('CYBORG_LIKE_DB_IO_TIMEOUT', '4'))
STRAND_POSTGRESQL = os.environ.get('CYBORG_LIKE_DB_STRAND') == '1'
# A stranded pooled connection costs io_timeout before it is replaced.
RECOVERY_BOUND = 20.0 + 2 * IO_TIMEOUT
BIND_BOUND = 20.0       # an accepted bind is resolved within this
BURST = 8
# The conductor's RPC threads: a burst can hold them all, so a thread
# blocked for ever on the database is a conductor that never serves again.
WORKERS = 8
PREPARED_ARQS = 4       # created before the cut, bound during it
PROFILE = 'db-faults-gpu'
DB_PORTS = {'mariadb': 3306, 'postgresql': 5432}
CASES = [('mariadb', 'reset'), ('postgresql', 'reset'),
         ('mariadb', 'blackhole'), ('postgresql', 'blackhole')]


@contextlib.contextmanager
def _deployment_behind_proxy(workdir, backend):
    port = DB_PORTS[backend]
    with rabbitmq_vhost() as transport_url, \
            fresh_database(backend) as direct_url, \
            TcpProxy('127.0.0.1', port) as proxy:
        proxied_url = direct_url.replace('127.0.0.1:%d' % port,
                                         '%s:%d' % proxy.address)
        assert proxied_url != direct_url
        extra = CONFIG + ('[DEFAULT]\nexecutor_thread_pool_size = %d\n'
                          '[database]\nio_timeout = %d\n'
                          % (WORKERS, IO_TIMEOUT))
        metrics_config, metrics_url = conductor_metrics_config()
        dep = Deployment(backend, workdir, transport_url, proxied_url,
                         extra_config=extra,
                         service_config={'conductor': metrics_config})
        direct = sa.create_engine(direct_url, poolclass=sa.pool.NullPool)
        try:
            with started(dep, all_devices):
                dep.wait_host_up()
                yield dep, proxy, direct, metrics_url
        finally:
            direct.dispose()


def _create_arq(dep):
    return timed('POST', dep.api_url + '/v2/accelerator_requests',
                  json={'device_profile_name': PROFILE})


def _bind(dep, arq, rp_uuid):
    answer = timed('PATCH', dep.api_url + '/v2/accelerator_requests',
                    json={arq: [
                        {'op': 'add', 'path': '/hostname',
                         'value': dep.host},
                        {'op': 'add', 'path': '/device_rp_uuid',
                         'value': rp_uuid},
                        {'op': 'add', 'path': '/instance_uuid',
                         'value': str(uuid.uuid4())}]})
    answer['arq'] = arq
    return answer


def _round(dep, pool, arq, rp_uuid, writes):
    """A list, a create and a bind one after the other, a write of every
    other kind (writes.py), then a burst of lists and creates that holds
    conductor threads."""
    answers = [timed('GET', dep.api_url + '/v2/devices'), _create_arq(dep),
               _bind(dep, arq, rp_uuid)]
    answers += [dict(write(), other_write=True) for write in _other_writes(
        writes)]
    burst = [pool.submit(timed, 'GET', dep.api_url + '/v2/devices')
             if i % 2 else pool.submit(_create_arq, dep)
             for i in range(BURST)]
    return answers + [f.result() for f in burst]


def _other_writes(writes):
    return (writes.create_profile, writes.create_lease,
            writes.create_attribute, writes.program, writes.create_rollout)


def _accepted(answers):
    return {a['arq'] for a in answers
            if 'arq' in a and a['status'] == 202}


def _check_answer(answer):
    """Success, or 503 with Retry-After and our error body; in time (under
    the ceiling: the measured times are printed before it is checked)."""
    assert answer['elapsed'] <= CEILING, answer
    if answer['status'] in (200, 201, 202):
        return
    assert answer['status'] == 503, answer
    assert answer['retry_after'] == str(RETRY_AFTER), answer
    fault = json.loads(json.loads(answer['body'])['error_message'])
    assert fault['error_code'] == 'accel.unavailable', fault
    assert 'Traceback' not in answer['body'], answer


def _print_log_lines(dep, answer):
    """What the services logged of a wrongly answered request (the lines
    with its request id: the conductor's carry it too), to stderr beside
    the failure."""
    print('\nwrong answer: %s' % json.dumps(answer), file=sys.stderr)
    wanted = answer.get('request_id') or 'no request id'
    for name, svc in dep.services.items():
        lines, prefix = [], None
        for line in svc.read_log().splitlines():
            if wanted in line:
                # oslo.log: a traceback's lines repeat the first's prefix
                # (time, pid, level, logger) without the request id.
                prefix = line.split(' [', 1)[0]
                lines.append(line)
            elif prefix and line.startswith(prefix + ' '):
                lines.append(line)
            else:
                prefix = None
        print('----- %s: %d line(s) of %s\n%s' % (
            name, len(lines), wanted, '\n'.join(lines)), file=sys.stderr)


def _rows(direct, query):
    with direct.connect() as conn:
        return conn.execute(sa.text(query)).all()


def _check_nothing_half_done(direct, created, refused_binds,
                             refused_requests):
    """No ARQ its caller was not answered 201 for, quota usage counting
    exactly the ARQs, every refused bind left unbound, every handle in use
    held by the ARQ bound to it, and no record in the change log of a
    write answered 503 (``refused_requests``: their request ids)."""
    logged = {row.request_id for row in _rows(
        direct, 'SELECT request_id FROM changes')}
    assert not logged & refused_requests, logged & refused_requests
    arqs = {row.uuid: row for row in _rows(
        direct, 'SELECT uuid, state, hostname, attach_handle_id, '
                'project_id, resource_class '
                'FROM extended_accelerator_requests')}
    assert set(arqs) == created, (
        'ARQs without a 201: %s; 201 without an ARQ: %s'
        % (set(arqs) - created, created - set(arqs)))
    counted = {}
    for arq in arqs.values():
        key = (arq.project_id, arq.resource_class)
        counted[key] = counted.get(key, 0) + 1
    usage = {(row.project_id, row.resource): row.in_use for row in _rows(
        direct, 'SELECT project_id, resource, in_use FROM quota_usages')
        if row.in_use}
    assert usage == counted, (usage, counted)
    for arq in refused_binds:
        assert arqs[arq].state == 'Initial', arqs[arq]
        assert arqs[arq].hostname is None, arqs[arq]
    in_use = sorted(row.id for row in _rows(
        direct, 'SELECT id FROM attach_handles WHERE in_use'))
    holders = [a for a in arqs.values() if a.attach_handle_id is not None]
    assert in_use == sorted(a.attach_handle_id for a in holders), holders
    assert all(a.state == 'Bound' for a in holders), holders


def _strands(backend, mode):
    return mode == 'blackhole' and (backend == 'mariadb'
                                    or STRAND_POSTGRESQL)


@pytest.mark.parametrize('backend,mode', CASES,
                         ids=['%s-%s' % case for case in CASES])
def test_database_cut(tmp_path, backend, mode):
    with _deployment_behind_proxy(str(tmp_path), backend) as (
            dep, proxy, direct, metrics_url):
        dep.call('POST', '/v2/device_profiles', {
            'name': PROFILE, 'groups': [{'resources:PGPU': '1'}]}, 201)
        [gpu] = dep.get('/v2/deployables?name=gpu0').json()['deployables']
        prepared = []
        for _ in range(PREPARED_ARQS):
            answer = _create_arq(dep)
            assert answer['status'] == 201, answer
            prepared += answer['arqs']
        created = set(prepared)
        writes = Writes(dep, PROFILE)
        # Fill the conductor's pool: every connection open at the cut is
        # one a thread may block on.
        with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
            warm = list(pool.map(lambda _: timed(
                'GET', dep.api_url + '/v2/devices'), range(2 * BURST)))
        assert all(a['status'] == 200 for a in warm), warm

        # The cut: bounded answers only, nothing half done.
        pooled = proxy.connection_count()
        proxy.cut(mode)
        cut_at = time.monotonic()
        answers = []
        with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
            while time.monotonic() - cut_at < CUT_SECONDS:
                # Never one whose bind was accepted (a second is a 409).
                unbound = [a for a in prepared if a not in _accepted(
                    answers)] or prepared
                answers += _round(dep, pool, unbound[0],
                                  gpu['rp_uuid'], writes)
        proxy.restore(strand=_strands(backend, mode))
        restored_at = time.monotonic()
        # Measured first, so that a failure below shows them too.
        print('\ndatabase cut %s %s %gs: seconds to answer %s' % (
            backend, mode, CUT_SECONDS, json.dumps({
                'bound': BOUND, 'ceiling': CEILING,
                'answers': summary([a['elapsed'] for a in answers])})))
        for answer in answers:
            try:
                _check_answer(answer)
            except AssertionError:
                _print_log_lines(dep, answer)
                raise
            created.update(answer['arqs'])
        accepted = _accepted(answers)
        refused = {a['arq'] for a in answers
                   if 'arq' in a} - accepted
        refused_requests = {a['request_id'] for a in answers
                            if a['method'] != 'GET' and a['status'] == 503}

        # Recovery: the first 200 of GET /v2/devices after the restore.
        recovered = recovery_seconds(dep.api_url, restored_at,
                                     RECOVERY_BOUND)
        assert recovered is not None, (
            'The conductor did not serve again within %ss of the database '
            'coming back' % RECOVERY_BOUND)
        # Writes too: a create and a bind that completes.
        after = wait_for(lambda: (lambda a: a if a['status'] == 201
                                  else None)(_create_arq(dep)),
                         timeout=RECOVERY_BOUND,
                         message='No ARQ could be created after the cut')
        created.update(after['arqs'])
        writes_back = time.monotonic() - restored_at
        [fresh] = after['arqs']
        # Binds need the host up: a heartbeat written since the restore
        # (none could be while the database was away, and a cut longer
        # than [conductor] host_down_after leaves the host down).
        [[beat]] = _rows(direct, 'SELECT last_heartbeat FROM hosts')
        wait_for(lambda: _rows(direct, 'SELECT last_heartbeat FROM hosts')
                 != [(beat,)], timeout=RECOVERY_BOUND,
                 message='No heartbeat was written after the cut')
        bound = wait_for(lambda: _bind(dep, fresh, gpu['rp_uuid'])[
            'status'] == 202, timeout=RECOVERY_BOUND,
            message='No bind was accepted after the cut')
        assert bound
        wait_for(lambda: not _rows(
            direct, "SELECT uuid FROM extended_accelerator_requests "
                    "WHERE state = 'BindStarted'"),
            timeout=BIND_BOUND, message='An ARQ stayed BindStarted')
        [[state, reason]] = _rows(
            direct, "SELECT state, state_reason FROM "
                    "extended_accelerator_requests WHERE uuid = '%s'" % fresh)
        assert state == 'Bound', (state, reason)

        # Nothing written late for a caller answered 503, once nothing
        # sent during the cut can still be carried out.
        wait_drained(dep, metrics_url, RECOVERY_BOUND)
        _check_nothing_half_done(direct, created, refused, refused_requests)
        # No other kind of write was done: none could be while the
        # database was away, and none was written later.
        assert all(a['status'] == 503 for a in answers
                   if a.get('other_write')), answers
        ghosts = writes.ghosts(direct, created, refused_requests)
        assert {kind: found for kind, found in ghosts.items()
                if kind not in ('arqs_created', 'arqs_deleted',
                                'arqs_bound') and found} == {}, ghosts
        # The log records what was done (the check above can fail).
        assert (after['request_id'],) in _rows(
            direct, 'SELECT request_id FROM changes')

        unreachable = dep.services['conductor'].read_log().count(
            'The database is unreachable')
        by_status = {}
        for answer in answers:
            by_status.setdefault(str(answer['status']), []).append(
                answer['elapsed'])
        print('\ndatabase cut %s %s %gs (io_timeout %d, strand %s): %s' % (
            backend, mode, CUT_SECONDS, IO_TIMEOUT,
            _strands(backend, mode), json.dumps({
                'bound': BOUND, 'ceiling': CEILING,
                'connections_at_cut': pooled,
                'answers': {status: summary(values)
                            for status, values in by_status.items()},
                'binds_refused': len(refused),
                'binds_accepted': len(accepted),
                'recovery_seconds': round(recovered, 2),
                'writes_back_seconds': round(writes_back, 2),
                'conductor_db_unreachable_logged': unreachable,
                'ghost_arqs': 0})))


@pytest.fixture
def conductor_db():
    """The conductor's db layer in this process, on a URL the test sets."""
    def use(url, **overrides):
        CONF.set_override('connection', url, group='database')
        for name, value in overrides.items():
            CONF.set_override(name, value, group='database')
        db_api.dispose()
        return db_api.get_engine()
    try:
        yield use
    finally:
        db_api.dispose()
        for name in ('connection', 'io_timeout', 'connect_timeout'):
            CONF.clear_override(name, group='database')


def test_socket_timeouts_reach_the_drivers(conductor_db):
    mysql = conductor_db(DB_URLS['mariadb'] % 'mysql', io_timeout=7)
    with mysql.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert (raw._read_timeout, raw._write_timeout,
                raw.connect_timeout) == (7, 7, 10)
    # A value in the URL wins over ours.
    pg = conductor_db(DB_URLS['postgresql'] % 'postgres'
                      + '?connect_timeout=3', io_timeout=12)
    with pg.connect() as conn:
        params = conn.connection.dbapi_connection.info.get_parameters()
    assert {key: params.get(key) for key in (
        'connect_timeout', 'tcp_user_timeout', 'keepalives',
        'keepalives_idle', 'keepalives_interval', 'keepalives_count')} == {
        'connect_timeout': '3', 'tcp_user_timeout': '12000',
        'keepalives': '1', 'keepalives_idle': '6',
        'keepalives_interval': '2', 'keepalives_count': '3'}
