"""``cyborg-like host driver ...`` and ``operation cancel``: driver
operations from the operator CLI against a live all-in-one whose agent
runs the stand-in playbooks of tests/playbooks/ through ansible-runner
(their "driver" is a version file in CYBORG_LIKE_TEST_DRIVERS)."""

import json
import pathlib
import time

import pytest

from tests.clients.test_cli import Cli


@pytest.fixture(scope='module')
def drivers(cyborg):
    """Where the all-in-one's stand-in playbooks keep the "installed
    driver" (harness/cloud.py gives every cloud its own)."""
    return pathlib.Path(cyborg.cloud.drivers_dir)


@pytest.fixture
def cli(cyborg, drivers):
    (drivers / 'behaviour.json').write_text('{}')
    return Cli(cyborg)


def _behave(drivers, **behaviour):
    (drivers / 'behaviour.json').write_text(json.dumps(behaviour))


def test_install_then_verify_with_wait(cli, cyborg):
    done = cli.json('host', 'driver', 'install', cyborg.host, 'opae',
                    '--driver-version', '2.1.0', '--wait')
    assert (done['type'], done['state']) == ('driver_install', 'succeeded')
    assert done['result']['versions']['version_after'] == '2.1.0'
    assert cli.json('host', 'show', cyborg.host)['driver_versions'] == {
        'opae': '2.1.0'}
    verified = cli.json('host', 'driver', 'verify', cyborg.host, 'opae',
                        '--wait')
    assert verified['state'] == 'succeeded'
    assert verified['result']['versions']['version_before'] == '2.1.0'


def test_a_failed_task_exits_1_with_the_reason(cli, cyborg, drivers):
    _behave(drivers, fail_task='Load the driver',
            fail_message='module refused to load')
    out, error = cli.fails('host', 'driver', 'upgrade', cyborg.host, 'opae',
                           '--driver-version', '2.2.0', '--wait', '-f', 'json')
    failed = json.loads(out)
    assert failed['state'] == 'failed'
    assert error.startswith('Operation %s (driver_upgrade) failed: '
                            % failed['uuid']), error
    assert 'Load the driver' in error, error
    # Its devices stay drained until a verify passes, and say so.
    (fpga,) = cli.json('device', 'list', '--type', 'FPGA')
    assert fpga['drained'] is True
    (reason,) = cli.json('device', 'show', fpga['uuid'])['drain_reasons']
    assert (reason['cause'], reason['operation_uuid']) == (
        'driver_operation', failed['uuid'])
    assert 'Load the driver' in reason['reason']
    rows = [line for line in cli.ok('device', 'list', '--type', 'FPGA')
            .splitlines() if fpga['uuid'] in line]
    assert rows[0].rstrip(' |').endswith('True'), rows
    _behave(drivers)
    assert cli.json('host', 'driver', 'verify', cyborg.host, 'opae',
                    '--wait')['state'] == 'succeeded'
    assert cli.json('device', 'show', fpga['uuid'])['drained'] is False


def test_cancel_a_running_operation(cli, cyborg, drivers):
    _behave(drivers, sleep_seconds=60)
    started = cli.json('host', 'driver', 'upgrade', cyborg.host, 'opae',
                       '--driver-version', '2.3.0')
    assert started['state'] in ('pending', 'running')
    # Cancelled once the agent has the playbook running.
    deadline = time.monotonic() + 60
    while cli.json('operation', 'show', started['uuid'])[
            'state'] == 'pending' and time.monotonic() < deadline:
        time.sleep(0.5)
    cancelling = cli.json('operation', 'cancel', started['uuid'])
    assert cancelling['state'] in ('cancelling', 'cancelled')
    ended = cli.json('operation', 'watch', started['uuid'])
    assert ended['state'] == 'cancelled', ended
    _behave(drivers)
    _out, error = cli.fails('operation', 'cancel', started['uuid'])
    assert error.startswith('HTTP 409 accel.operation.not_cancellable'), \
        error


def test_a_bad_parameter_is_refused_before_anything_runs(cli, cyborg):
    _out, error = cli.fails('host', 'driver', 'install', cyborg.host,
                            'opae', '--parameter', 'no_such=1')
    assert error.startswith('HTTP 400 '), error
    _out, error = cli.fails('host', 'driver', 'install', cyborg.host,
                            'opae', '--parameter', 'novalue', code=1)
    assert 'KEY=VALUE' in error, error
