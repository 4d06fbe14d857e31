"""``cyborg-like``, the operator CLI, as operators run it, against a live
``cyborg-like-all-in-one`` with no Keystone (``--os-endpoint URL`` alone
means ``--os-auth-type none``).

The CLI runs in this process (clirun.in_process: its app, with its own
stdin, stdout, stderr and no ``OS_*`` variables), which spares a Python
start-up a command. Three tests run the console script in a subprocess,
for what only a real process shows: a list with the endpoint from the
environment (test_os_endpoint_variable_alone_means_no_auth), a failure's
exit code and whole stderr (test_unreachable_service_is_one_line) and the
progress line on a real terminal
(test_program_wait_on_a_terminal_rewrites_one_line).

The service of this module pages lists by two (``[api] max_limit = 2``),
so that lists of three items show the CLI following ``next``.
"""

import datetime
import hashlib
import json
import os
import pty
import subprocess
import uuid

import pytest
import requests

from tests.clients import clirun
from tests.clients.clirun import CYBORG_LIKE
from tests.clients.clirun import clean_env
from tests.clients.clirun import OPENSTACK
from tests.clients.service import HANDLES
from tests.clients.service import Service

MAX_LIMIT = 2
TIMEOUT = clirun.TIMEOUT


class PagedService(Service):
    def __init__(self, workdir):
        super().__init__(workdir)
        path = self.cloud.config_file
        with open(path) as f:
            text = f.read()
        assert '[api]\n' in text, text
        with open(path, 'w') as f:
            f.write(text.replace('[api]\n', '[api]\nmax_limit = %d\n'
                                 % MAX_LIMIT, 1))


@pytest.fixture(scope='module')
def cyborg(tmp_path_factory):
    """Replaces conftest's: the same service, paging by MAX_LIMIT."""
    service = PagedService(str(tmp_path_factory.mktemp('all-in-one')))
    try:
        yield service.start()
    finally:
        returncode = service.stop()
    assert returncode == 0, service.log_tail()


class Cli:
    """``cyborg-like --os-endpoint URL ...`` against the module's service."""

    def __init__(self, service):
        self.service = service
        self.url = service.url

    def argv(self, *args):
        return [CYBORG_LIKE, '--os-endpoint', self.url] + list(args)

    def run(self, *args):
        """The command run in this process (see clirun)."""
        return clirun.in_process(self.argv(*args))

    def ok(self, *args):
        """stdout of a command that must succeed."""
        result = self.run(*args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result.stdout

    def json(self, *args):
        return json.loads(self.ok(*(args + ('-f', 'json'))))

    def fails(self, *args, code=1):
        """(stdout, the one line of stderr) of a command that must fail."""
        result = self.run(*args)
        assert result.returncode == code, (args, result.returncode,
                                           result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        return result.stdout, lines[-1] if lines else ''


@pytest.fixture(scope='module')
def cli(cyborg):
    return Cli(cyborg)


def api(cyborg, path, **params):
    """The API's own answer, to compare the CLI's output with."""
    resp = requests.get(cyborg.url + '/v2' + path, params=params, timeout=30,
                        headers={'OpenStack-API-Version': 'accelerator '
                                 'latest'})
    resp.raise_for_status()
    return resp.json()


def table_rows(text):
    """The cells of a cliff table, header row first."""
    return [[cell.strip() for cell in line.strip('|').split('|')]
            for line in text.splitlines() if line.startswith('|')]


def device(cyborg, kind):
    (found,) = api(cyborg, '/devices', type=kind)['devices']
    return found['uuid']


def _name(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


# --- hosts

def test_host_list_table_and_json(cli, cyborg):
    (host,) = cli.json('host', 'list')
    assert host['hostname'] == cyborg.host
    assert host['state'] == 'up'
    assert datetime.datetime.fromisoformat(host['last_heartbeat'])
    assert set(host) == {'hostname', 'state', 'last_heartbeat',
                         'agent_version'}
    rows = table_rows(cli.ok('host', 'list', '--long'))
    assert rows[0] == ['hostname', 'state', 'last_heartbeat',
                       'agent_version', 'inventory_hash', 'labels',
                       'aggregates']
    assert rows[1][:2] == [cyborg.host, 'up']
    assert rows[1][4] == api(cyborg, '/hosts')['hosts'][0]['inventory_hash']


def test_host_show_lists_its_devices(cli, cyborg):
    host = cli.json('host', 'show', cyborg.host)
    assert host['state'] == 'up'
    devices = api(cyborg, '/devices')['devices']
    assert sorted(host['devices']) == sorted(
        '%s %s %s' % (d['uuid'], d['type'], d['model']) for d in devices)
    assert host['driver_versions'] == {}
    assert host['drained_devices'] == []
    assert host['aggregates'] == []
    _out, error = cli.fails('host', 'show', 'no-such-host')
    assert error.startswith('HTTP 404 accel.host.not_found: Host '
                            'no-such-host could not be found.'), error


# --- availability

def test_availability_show(cli, cyborg):
    feed = api(cyborg, '/availability')
    shown = cli.json('availability', 'show')
    assert shown == [{'site': None, 'resource_class': g['resource_class'],
                      'vendor': g['vendor'], 'model': g['model'],
                      'host': g['host'], 'total': g['total'],
                      'used': g['used'], 'reserved': g['reserved'],
                      'free': g['free']} for g in feed['groups']]
    by_class = cli.json('availability', 'show', '--group-by',
                        'resource_class')
    assert {r['resource_class'] for r in by_class} == \
        {g['resource_class'] for g in feed['groups']}
    assert sum(r['total'] for r in by_class) == feed['totals']['total']
    _out, error = cli.fails('availability', 'show', '--group-by', 'colour',
                            code=2)     # argparse's usage error
    assert 'give dimensions among resource_class' in error


def test_lease_create_list_show_give_back_revoke(cli, cyborg):
    gpu = device(cyborg, 'GPU')
    day = (datetime.datetime.now(datetime.timezone.utc)
           + datetime.timedelta(days=3)).date()
    window = ('--start', '%sT10:00' % day, '--end', '%sT11:00' % day,
              '--timezone', 'UTC')
    lease = cli.json('lease', 'create', '--device', gpu, '--name',
                     'cli-lease', '--recurrence', 'FREQ=DAILY;COUNT=2',
                     *window)
    assert (lease['state'], lease['count'], lease['name']) == (
        'active', 1, 'cli-lease')
    _out, error = cli.fails('lease', 'create', '--device', gpu, *window)
    assert error.startswith('HTTP 409 accel.lease.conflict') and \
        lease['uuid'] in error, error
    assert lease['uuid'] in [x['uuid'] for x in cli.json('lease', 'list')]
    assert cli.json('lease', 'show', lease['uuid'])['recurrence'] == \
        'FREQ=DAILY;COUNT=2'
    at = cli.json('availability', 'show', '--group-by', 'model', '--at',
                  '%sT10:30:00Z' % day)
    assert [g['free'] for g in at if g['model'] == api(
        cyborg, '/devices/%s' % gpu)['model']] == [0]
    assert cli.json('lease', 'give-back', lease['uuid'])['state'] == \
        'returned'
    again = cli.json('lease', 'create', '--resource-class', 'PGPU',
                     '--count', '1', *window)
    assert cli.json('lease', 'delete', again['uuid'])['state'] == 'revoked'
    assert [x['state'] for x in cli.json('lease', 'list', '--state',
                                         'active')] == []


def test_rollout_dry_run_create_pause_resume_abort(cli, cyborg):
    plan = cli.json('rollout', 'create', 'bs-cli', '--canary', '1',
                    '--wave', '50%', '--dry-run')
    assert (plan['targets'], [w['targets'] for w in plan['waves']]) == \
        (2, [1, 1])
    # No Placement here: the host is in no aggregate, so nothing selected.
    assert cli.json('rollout', 'create', 'bs-cli', '--aggregate',
                    'a0000000-0000-4000-8000-00000000000a', '--dry-run'
                    )['targets'] == 0
    assert cli.json('rollout', 'list') == []
    rollout = cli.json('rollout', 'create', 'bs-cli', '--name', 'cli',
                       '--canary', '1', '--max-unavailable', '1')
    assert (rollout['state'], rollout['targets']) == (
        'running', {'pending': 2, 'total': 2})
    uuid = rollout['uuid']
    assert cli.json('rollout', 'pause', uuid)['state'] == 'paused'
    _out, error = cli.fails('rollout', 'pause', uuid)
    assert error.startswith('HTTP 409 accel.conflict'), error
    assert cli.json('rollout', 'resume', uuid)['state'] == 'running'
    assert cli.json('rollout', 'abort', uuid)['state'] == 'aborted'
    assert [r['uuid'] for r in cli.json('rollout', 'list', '--state',
                                        'aborted')] == [uuid]
    assert cli.json('rollout', 'show', uuid)['name'] == 'cli'
    # Two targets, paged by two: the canary (wave 0) and wave 1.
    targets = cli.json('rollout', 'targets', uuid)
    assert [t['wave'] for t in targets] == [0, 1]
    assert cli.json('rollout', 'targets', uuid, '--wave', '1',
                    '--state', 'pending')[0]['wave'] == 1
    # A driver version to the hosts with a GPU and no NVIDIA driver yet.
    plan = cli.json('rollout', 'create', '--kind', 'driver', '--driver',
                    'nvidia', '--driver-version', '2.0', '--device-type',
                    'GPU', '--current-version', 'none', '--dry-run')
    assert (plan['targets'], plan['waves'][0]['first_host']) == (
        1, api(cyborg, '/hosts')['hosts'][0]['hostname'])
    assert cli.json('rollout', 'create', '--kind', 'driver', '--driver',
                    'nvidia', '--driver-version', '2.0',
                    '--current-version', '1.0', '--dry-run')['targets'] == 0
    _out, error = cli.fails('rollout', 'create', '--kind', 'driver',
                            'bs-cli')
    assert 'takes --driver and --driver-version' in error, error
    # The family's parameters and the playbook timeout, typed as JSON.
    driver = cli.json('rollout', 'create', '--kind', 'driver', '--driver',
                      'nvidia', '--driver-version', '2.0', '--device-type',
                      'GPU', '--parameter', 'vgpu_manager=true',
                      '--parameter', 'expected_devices=2',
                      '--parameter', 'package=nvidia-driver',
                      '--operation-timeout', '1800', '--canary', '1')
    assert (driver['parameters'], driver['timeout']) == (
        {'vgpu_manager': True, 'expected_devices': 2,
         'package': 'nvidia-driver'}, 1800)
    assert cli.json('rollout', 'abort', driver['uuid'])['state'] == \
        'aborted'
    _out, error = cli.fails('rollout', 'create', '--kind', 'driver',
                            '--driver', 'opae', '--driver-version', '2.0',
                            '--parameter', 'vgpu_manager=true')
    assert error.startswith('HTTP 400'), error
    assert 'vgpu_manager' in error, error
    _out, error = cli.fails('rollout', 'create', 'bs-cli', '--parameter',
                            'package=x')
    assert 'no --driver, --driver-version, --parameter' in error, error
    # Hosts labelled by the operator, selected by their labels.
    host = api(cyborg, '/hosts')['hosts'][0]['hostname']
    labelled = cli.json('host', 'set', host, '--label', 'ring=canary',
                        '--label', 'rack=r12')
    assert labelled['labels'] == {'rack': 'r12', 'ring': 'canary'}
    assert cli.json('host', 'set', host, '--unset-label', 'rack')[
        'labels'] == {'ring': 'canary'}
    assert cli.json('rollout', 'create', 'bs-cli', '--label', 'ring=canary',
                    '--dry-run')['targets'] == 2
    assert cli.json('rollout', 'create', 'bs-cli', '--label', 'ring=late',
                    '--dry-run')['targets'] == 0
    _out, error = cli.fails('host', 'set', host, '--label=-bad=x')
    assert error.startswith('HTTP 400'), error
    _out, error = cli.fails('host', 'set', host)
    assert 'Nothing to change' in error, error


def test_os_endpoint_variable_alone_means_no_auth(cyborg):
    # A subprocess: the console script, with the endpoint from the
    # environment it starts in.
    result = clirun.subprocess_run(
        [CYBORG_LIKE, 'host', 'list', '-f', 'value', '-c', 'hostname'],
        env={'OS_ENDPOINT': cyborg.url})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [cyborg.host]


# --- devices

def test_device_list_filters_and_columns(cli, cyborg):
    devices = cli.json('device', 'list')
    assert sorted(d['type'] for d in devices) == ['FPGA', 'GPU']
    assert {d['status'] for d in devices} == {'enabled'}
    assert {d['drained'] for d in devices} == {False}
    (gpu,) = [d for d in devices if d['type'] == 'GPU']
    assert cli.ok('device', 'list', '--type', 'GPU', '-f', 'value',
                  '-c', 'uuid').split() == [gpu['uuid']]
    rows = table_rows(cli.ok('device', 'list', '--hostname', cyborg.host))
    assert rows[0] == ['uuid', 'type', 'vendor', 'model', 'hostname',
                       'status', 'drained']
    assert len(rows) == 3
    shown = cli.json('device', 'show', gpu['uuid'])
    assert shown['std_board_info'] == api(
        cyborg, '/devices/' + gpu['uuid'])['std_board_info']
    assert (shown['drained'], shown['drain_reasons']) == (False, [])
    assert 'links' not in shown


def test_device_disable_and_enable(cli, cyborg):
    gpu = device(cyborg, 'GPU')
    try:
        assert cli.json('device', 'disable', gpu)['status'] == 'maintaining'
        (listed,) = cli.json('device', 'list', '--status', 'maintaining')
        assert listed['uuid'] == gpu
    finally:
        assert cli.json('device', 'enable', gpu)['status'] == 'enabled'


def test_device_health_and_history(cli, cyborg):
    fpga = device(cyborg, 'FPGA')
    health = cli.json('device', 'health', 'show', fpga)
    expected = api(cyborg, '/devices/%s/health' % fpga, history=0)
    del expected['history']
    assert health == expected
    rows = table_rows(cli.ok('device', 'health', 'show', fpga))
    assert [r[0] for r in rows[1:]] == [
        'device_uuid', 'health', 'service_state', 'healthy_checks',
        'service_changed_at', 'reasons', 'unchecked', 'utilization',
        'updated_at', 'drained', 'drain_reasons']
    assert health['service_state'] == 'serving'
    history = cli.json('device', 'health', 'history', fpga, '--limit', '5')
    assert history == api(cyborg, '/devices/%s/health' % fpga,
                          history=5)['history']


# --- errors, versions, paging

def test_api_error_is_one_line_with_its_code(cli):
    missing = str(uuid.uuid4())
    out, error = cli.fails('device', 'show', missing)
    assert out == ''
    assert error.startswith('HTTP 404 accel.device.not_found: Device %s '
                            % missing), error
    assert 'Traceback' not in error


def test_unreachable_service_is_one_line():
    with __import__('socket').socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    # A subprocess: the whole stderr of a failing console script (in
    # this process, pytest would take warnings and log records away).
    result = clirun.subprocess_run(
        [CYBORG_LIKE, '--os-endpoint', 'http://127.0.0.1:%d' % port,
         'host', 'list'])
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('Cannot reach the accelerator API at '
                               'http://127.0.0.1:%d/v2' % port)


def test_microversion_option(cli):
    old = cli.json('--os-accelerator-api-version', '2.0', 'device', 'list')
    # Devices carry their status from 2.3 on.
    assert {d['status'] for d in old} == {None}
    # ... and whether they are drained from 2.4 on.
    assert {d['drained'] for d in old} == {None}
    _out, error = cli.fails('--os-accelerator-api-version', '9.9', 'device',
                            'list')
    assert error.startswith('HTTP 406 '), error


def test_lists_follow_pages_unless_limited(cli, cyborg):
    attributes = cli.json('attribute', 'list', '--sort-key', 'uuid')
    # More than one page of the service: the CLI followed ``next``.
    assert len(attributes) > MAX_LIMIT
    uuids = [a['uuid'] for a in attributes]
    assert uuids == sorted(uuids)
    first = cli.json('attribute', 'list', '--sort-key', 'uuid', '--limit',
                     '1')
    assert [a['uuid'] for a in first] == uuids[:1]
    after = cli.json('attribute', 'list', '--sort-key', 'uuid', '--limit',
                     '2', '--marker', uuids[0])
    assert [a['uuid'] for a in after] == uuids[1:3]


# --- deployables, programming, operations

def _region(cli, name='region0'):
    return api(cli.service, '/deployables', name=name)['deployables'][0]


def test_deployable_list_and_show(cli, cyborg):
    deployables = cli.json('deployable', 'list', '--long')
    assert sorted(d['name'] for d in deployables) == ['gpu0', 'region0',
                                                      'region1']
    region = _region(cli)
    assert region['rp_uuid'] == cyborg.rp_uuid('region0')
    shown = cli.json('deployable', 'show', region['uuid'])
    assert shown['attributes_list'] == cyborg.deployable('region0')[
        'attributes_list']


def test_program_wait_succeeds(cli):
    region = _region(cli)
    result = cli.run('deployable', 'program', region['uuid'], 'bs-gzip-1',
                     '--wait', '-f', 'json')
    assert result.returncode == 0, result.stderr
    operation = json.loads(result.stdout)
    assert operation['state'] == 'succeeded'
    assert operation['target_uuid'] == region['uuid']
    # Not a terminal: plain progress lines, the last one the end.
    progress = result.stderr.strip().splitlines()
    assert progress[-1].startswith('operation %s: succeeded ('
                                   % operation['uuid']), progress
    assert '\r' not in result.stderr
    assert cli.json('deployable', 'show', region['uuid'])[
        'bitstream_id'] == 'bs-gzip-1'


def test_program_wait_fails_with_the_reason(cli):
    region = _region(cli, 'region1')
    result = cli.run('deployable', 'program', region['uuid'], 'bs-refused',
                     '--wait', '-f', 'json')
    assert result.returncode == 1
    operation = json.loads(result.stdout)
    assert operation['state'] == 'failed'
    last = result.stderr.strip().splitlines()[-1]
    assert last == 'Operation %s (program) failed: %s' % (
        operation['uuid'], operation['detail'])
    assert 'PR interface id mismatch' in last
    _out, error = cli.fails('operation', 'watch', operation['uuid'])
    assert error == last


def test_program_then_watch_and_list_operations(cli):
    region = _region(cli)
    started = cli.json('deployable', 'program', region['uuid'], 'bs-gzip-1')
    assert started['state'] in ('pending', 'running', 'succeeded')
    watched = cli.json('operation', 'watch', started['uuid'])
    assert watched['uuid'] == started['uuid']
    assert watched['state'] == 'succeeded'
    assert cli.json('operation', 'show', started['uuid']) == watched
    listed = cli.json('operation', 'list', '--target', region['uuid'],
                      '--state', 'succeeded')
    assert started['uuid'] in [o['uuid'] for o in listed]
    assert {o['target_uuid'] for o in listed} == {region['uuid']}


def test_program_wait_on_a_terminal_rewrites_one_line(cli):
    # A subprocess: stderr is a real terminal (a pty, which shows "\n" as
    # "\r\n"), the console script's own.
    region = _region(cli)
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            cli.argv('deployable', 'program', region['uuid'], 'bs-gzip-1',
                     '--wait', '-f', 'json'),
            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
            env=clean_env(), timeout=TIMEOUT, check=False)
        os.close(slave)
        slave = None
        shown = b''
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0, shown
    operation = json.loads(proc.stdout)
    text = shown.decode()
    # One state line, rewritten in place ("\r") and ended by one newline
    # (which the terminal shows as "\r\n").
    assert text.endswith('\r\n') and text.count('\n') == 1, repr(text)
    states = [part.rstrip() for part in text.split('\r') if part.strip()]
    prefix = 'operation %s: ' % operation['uuid']
    assert all(state.startswith(prefix) for state in states), states
    assert states[-1].startswith(prefix + 'succeeded ('), states


# --- device profiles and accelerator requests

def test_device_profile_create_show_list_delete(cli):
    name = _name('cli-profile')
    created = cli.json('device', 'profile', 'create', name, '--group',
                       'resources:FPGA=1,trait:CUSTOM_FPGA_INTEL_N3000='
                       'required', '--group', 'resources:PGPU=1',
                       '--description', 'two groups')
    assert created['groups'] == [
        {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL_N3000': 'required'},
        {'resources:PGPU': '1'}]
    assert cli.json('device', 'profile', 'show', name) == created
    rows = table_rows(cli.ok('device', 'profile', 'list', '--name', name))
    assert rows[1][:2] == [created['uuid'], name]
    assert "resources:FPGA='1'" in rows[1][3]
    _out, error = cli.fails('device', 'profile', 'create', _name('x'),
                            '--group', 'resources:FPGA', code=2)
    assert 'KEY=VALUE' in error
    cli.ok('device', 'profile', 'delete', name)
    _out, error = cli.fails('device', 'profile', 'delete', name,
                            created['uuid'])
    assert error == '2 of 2 device profiles not deleted: %s, %s' % (
        name, created['uuid'])


@pytest.fixture(scope='module')
def gpu_profile(cyborg):
    name = _name('cli-gpu')
    requests.post(cyborg.url + '/v2/device_profiles', timeout=30, json={
        'name': name, 'groups': [{'resources:PGPU': '1'}]}
    ).raise_for_status()
    return name


def new_arq(cyborg, profile):
    resp = requests.post(cyborg.url + '/v2/accelerator_requests', timeout=30,
                         json={'device_profile_name': profile})
    resp.raise_for_status()
    return resp.json()['arqs'][0]['uuid']


def set_device(cyborg, uuid, action):
    requests.post('%s/v2/devices/%s/%s' % (cyborg.url, uuid, action),
                  timeout=30).raise_for_status()


def test_arq_create_bind_unbind_delete(cli, cyborg, gpu_profile):
    (arq,) = cli.json('arq', 'create', gpu_profile)
    assert arq['state'] == 'Initial'
    instance = str(uuid.uuid4())
    result = cli.run('arq', 'bind', arq['uuid'], '--hostname', cyborg.host,
                     '--device-rp-uuid', cyborg.rp_uuid('gpu0'),
                     '--instance-uuid', instance, '--wait', '-f', 'json')
    assert result.returncode == 0, result.stderr
    bound = json.loads(result.stdout)
    assert bound['state'] == 'Bound'
    assert bound['attach_handle_info'] == HANDLES['gpu0']
    assert result.stderr.strip().splitlines()[-1].startswith(
        'ARQ %s: Bound (' % arq['uuid'])
    (listed,) = cli.json('arq', 'list', '--instance', instance, '--long',
                         '--resolved')
    assert listed['attach_handle_info'] == HANDLES['gpu0']
    assert cli.json('arq', 'show', arq['uuid']) == {
        k: v for k, v in listed.items()}
    # The workloads by the health of the device they hold.
    health = listed['device_health']
    assert health in ('healthy', 'unknown')
    assert [a['uuid'] for a in cli.json('arq', 'list', '--device-health',
                                        health)] == [arq['uuid']]
    assert cli.json('arq', 'list', '--device-health', 'unhealthy') == []
    unbound = cli.json('arq', 'unbind', arq['uuid'], '--wait')
    assert unbound['state'] == 'Unbound'
    assert unbound['hostname'] is None
    cli.ok('arq', 'delete', arq['uuid'])
    assert requests.get(cyborg.url + '/v2/accelerator_requests/'
                        + arq['uuid'], timeout=30).status_code == 404


def test_arq_schedule_wait(cli, cyborg, gpu_profile):
    """Standalone scheduling: the conductor picks the (only) GPU; with it
    taken, the next request fails with the reason (exit 1)."""
    first, second = (new_arq(cyborg, gpu_profile) for _ in range(2))
    try:
        result = cli.run('arq', 'schedule', first, '--instance-uuid',
                         str(uuid.uuid4()), '--hostname', cyborg.host,
                         '--spread', '--wait', '-f', 'json')
        assert result.returncode == 0, result.stderr
        bound = json.loads(result.stdout)
        assert bound['state'] == 'Bound'
        assert bound['device_rp_uuid'] == cyborg.rp_uuid('gpu0')
        assert bound['attach_handle_info'] == HANDLES['gpu0']
        result = cli.run('arq', 'schedule', second, '--instance-uuid',
                         str(uuid.uuid4()), '--pack', '--wait', '-f',
                         'json')
        assert result.returncode == 1, (result.stdout, result.stderr)
        failed = json.loads(result.stdout)
        assert failed['state'] == 'BindFailed'
        assert 'No free deployable' in failed['state_reason']
        assert result.stderr.strip().splitlines()[-1] == (
            'ARQ %s: binding failed: %s' % (second, failed['state_reason']))
        # Without --wait: the ARQ as the API answered (BindStarted).
        cli.ok('arq', 'unbind', second, '--wait')
        started = cli.json('arq', 'schedule', second, '--instance-uuid',
                           str(uuid.uuid4()))
        assert started['state'] == 'BindStarted'
    finally:
        requests.delete(cyborg.url + '/v2/accelerator_requests', timeout=30,
                        params={'arqs': '%s,%s' % (first, second)})


def test_arq_bind_wait_fails_with_the_reason(cli, cyborg, gpu_profile):
    gpu = device(cyborg, 'GPU')
    arq = new_arq(cyborg, gpu_profile)
    # A device in maintenance is not bound: the binding fails.
    set_device(cyborg, gpu, 'disable')
    try:
        result = cli.run('arq', 'bind', arq, '--hostname', cyborg.host,
                         '--device-rp-uuid', cyborg.rp_uuid('gpu0'),
                         '--instance-uuid', str(uuid.uuid4()), '--wait',
                         '-f', 'json')
    finally:
        set_device(cyborg, gpu, 'enable')
        requests.delete(cyborg.url + '/v2/accelerator_requests', timeout=30,
                        params={'arqs': arq}).raise_for_status()
    assert result.returncode == 1, (result.stdout, result.stderr)
    failed = json.loads(result.stdout)
    assert failed['state'] == 'BindFailed'
    assert result.stderr.strip().splitlines()[-1] == (
        'ARQ %s: binding failed: %s' % (arq, failed['state_reason']))


def test_arq_delete_by_instance_and_usage(cli, cyborg, gpu_profile):
    _out, error = cli.fails('arq', 'delete')
    assert error == 'Give ARQ uuids or --instance, not both nor neither'
    arq = new_arq(cyborg, gpu_profile)
    instance = str(uuid.uuid4())
    cli.ok('arq', 'bind', arq, '--hostname', cyborg.host,
           '--device-rp-uuid', cyborg.rp_uuid('gpu0'), '--instance-uuid',
           instance, '--wait')
    quota = cli.json('quota', 'show', 'noauth')
    assert quota['usage'] == api(cyborg, '/quotas/noauth')['quota']['usage']
    assert quota['usage'].get('PGPU') == 1
    cli.ok('arq', 'delete', '--instance', instance)
    assert cli.json('arq', 'list', '--instance', instance) == []
    assert cli.json('quota', 'show', 'noauth')['usage'].get('PGPU', 0) == 0


def test_quota_show_needs_a_project_without_keystone(cli):
    _out, error = cli.fails('quota', 'show')
    assert error == ('Give a project id: without Keystone there is no '
                     'project of your own')


def test_quota_set_merges_and_unset_returns_to_the_defaults(cli):
    project = _name('cli-quota')
    quota = cli.json('quota', 'set', project, '--limit', 'FPGA=2',
                     '--limit', 'PGPU=-1')
    assert (quota['project_id'], quota['limits'], quota['sources']) == (
        project, {'FPGA': 2, 'PGPU': -1},
        {'FPGA': 'project', 'PGPU': 'project'})
    assert cli.json('quota', 'set', project, '--limit', 'FPGA=1')[
        'limits'] == {'FPGA': 1, 'PGPU': -1}
    assert cli.json('quota', 'show', project) == \
        api(cli.service, '/quotas/%s' % project)['quota']
    _out, error = cli.fails('quota', 'set', project, '--limit', 'WIDGET=1')
    assert error.startswith('HTTP 400 accel.request.invalid'), error
    _out, error = cli.fails('quota', 'set', project, '--limit', 'FPGA=two')
    assert error == ("Expected RESOURCE_CLASS=N (N an integer, -1 for "
                     "unlimited), not 'FPGA=two'"), error
    assert cli.ok('quota', 'unset', project) == ''
    quota = cli.json('quota', 'show', project)
    assert (quota['limits'], quota['sources']) == ({}, {})


# --- attributes

def test_attribute_create_show_list_delete(cli):
    gpu_id = next(a['deployable_id']
                  for a in cli.json('attribute', 'list', '--key', 'rc')
                  if a['value'] == 'PGPU')
    key = _name('cli-key')
    created = cli.json('attribute', 'create', '--deployable-id',
                       str(gpu_id), '--key', key, '--value', 'v1')
    assert (created['deployable_id'], created['key'], created['value']) == (
        gpu_id, key, 'v1')
    assert cli.json('attribute', 'show', created['uuid']) == created
    (listed,) = cli.json('attribute', 'list', '--key', key,
                         '--deployable-id', str(gpu_id))
    assert listed['uuid'] == created['uuid']
    _out, error = cli.fails('attribute', 'create', '--deployable-id',
                            str(gpu_id), '--key', key, '--value', 'v2')
    assert error.startswith('HTTP 409 '), error
    cli.ok('attribute', 'delete', created['uuid'])
    assert api(cli.service, '/attributes', key=key)['attributes'] == []


# --- the openstackclient plugin

def osc(cyborg, *args):
    """``openstack ...``, in this process (see clirun)."""
    return clirun.in_process([OPENSTACK, '--os-auth-type', 'none',
                              '--os-endpoint', cyborg.url] + list(args))


def test_openstack_plugin_beside_cyborgclient(cli, cyborg):
    result = osc(cyborg, 'accel-like', 'device', 'list', '-f', 'json')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == cli.json('device', 'list')
    older = osc(cyborg, '--os-accel-like-api-version', '2.2', 'accel-like',
                'device', 'list', '-f', 'json')
    assert {d['status'] for d in json.loads(older.stdout)} == {None}
    # python-cyborgclient still owns "openstack accelerator ...".
    theirs = osc(cyborg, '--debug', 'accelerator', 'device', 'list',
                 '-f', 'json')
    assert theirs.returncode == 0, theirs.stderr
    assert ('command: accelerator device list -> '
            'cyborgclient.osc.v2.device.ListDevice') in theirs.stderr
    ours = osc(cyborg, '--debug', 'accel-like', 'device', 'list')
    assert ('command: accel-like device list -> '
            'cyborg_like.cli.v2.devices.ListDevice') in ours.stderr


def test_every_command_is_listed_and_has_help(cli):
    from cyborg_like.cli import shell
    manager = shell.CommandManager(shell.COMMAND_GROUP)
    names = sorted(name for name, _ep in manager)
    assert 'operation watch' in names and 'arq bind' in names, names
    listed = cli.ok('--help')
    for name in names:
        assert '\n  %s ' % name in listed, name
        command_class = manager.find_command(name.split())[0]
        parser = command_class(None, None).get_parser('cyborg-like ' + name)
        assert command_class.__doc__.strip().split('\n')[0] in (
            parser.description or ''), name


# --- the image catalog and firmware

def test_bitstream_create_upload_download_delete(cli, cyborg, tmp_path):
    data = b'GBS fake crypto accelerator\n' * 100
    source = tmp_path / 'crypto.gbs'
    source.write_bytes(data)
    name = _name('cli-image')
    image = cli.json('bitstream', 'create', name, '--kind', 'bitstream',
                     '--vendor', '0x8086', '--function-name', 'crypto',
                     '--file', str(source))
    assert image['status'] == 'active', image
    assert (image['size'], image['sha256']) == (
        len(data), hashlib.sha256(data).hexdigest())
    (listed,) = cli.json('bitstream', 'list', '--name', name, '--kind',
                         'bitstream')
    assert (listed['uuid'], listed['function_name']) == (image['uuid'],
                                                         'crypto')
    copy = tmp_path / 'copy.gbs'
    cli.ok('bitstream', 'download', image['uuid'], str(copy))
    assert copy.read_bytes() == data
    # A bitstream is no firmware: the API refuses, the CLI says why.
    _out, error = cli.fails('device', 'firmware', 'flash',
                            device(cyborg, 'FPGA'), image['uuid'], '--wait')
    assert error.startswith('HTTP 409 accel.bitstream.incompatible: '), error
    queued = cli.json('bitstream', 'create', _name('cli-queued'))
    assert queued['status'] == 'queued'
    uploaded = cli.json('bitstream', 'upload', queued['uuid'], str(source))
    assert (uploaded['status'], uploaded['sha256']) == (
        'active', image['sha256'])
    cli.ok('bitstream', 'delete', image['uuid'], queued['uuid'])
    for uuid_ in (image['uuid'], queued['uuid']):
        assert requests.get('%s/v2/bitstreams/%s' % (cyborg.url, uuid_),
                            timeout=30).status_code == 404


# --- MIG layouts

def test_device_mig_layout_apply_waits_for_the_new_layout(cli, cyborg):
    gpu = device(cyborg, 'GPU')
    done = cli.json('device', 'mig', 'layout', 'apply', gpu, '3g.40gb',
                    '4g.40gb', '--wait')
    assert (done['type'], done['state']) == ('mig_layout', 'succeeded')
    assert done['result']['new'] == ['4g.40gb', '3g.40gb']
    shown = cli.json('device', 'show', gpu)
    info = json.loads(shown['vendor_board_info'])      # Cyborg's: a string
    assert info['mig_layout'] == ['4g.40gb', '3g.40gb']
    # No profile given: the whole GPU again.
    done = cli.json('device', 'mig', 'layout', 'apply', gpu, '--wait')
    assert (done['state'], done['result']['new']) == ('succeeded', [])
    # The FPGA has no MIG: the API refuses, the CLI says why.
    _out, error = cli.fails('device', 'mig', 'layout', 'apply',
                            device(cyborg, 'FPGA'), '1g.10gb')
    assert error.startswith('HTTP 409 '), error
    assert 'does not support MIG' in error, error


def test_change_list_by_request_id_and_target(cli, cyborg, gpu_profile):
    resp = requests.post(cyborg.url + '/v2/accelerator_requests',
                         json={'device_profile_name': gpu_profile},
                         timeout=30)
    assert resp.status_code == 201
    request_id = resp.headers['X-OpenStack-Request-Id']
    arq = resp.json()['arqs'][0]['uuid']
    (change,) = cli.json('change', 'list', '--request-id', request_id,
                         '--long')
    assert change['method'] == 'create_arqs'
    assert arq in change['target']
    assert 'extended_accelerator_requests' in change['written']
    assert [c['request_id'] for c in cli.json('change', 'list', '--target',
                                              arq)] == [request_id]
    assert cli.json('change', 'list', '--request-id', 'req-none') == []
    cli.ok('arq', 'delete', arq)      # the module's service is shared
