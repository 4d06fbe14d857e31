"""The all-in-one as the README starts it (the fake driver's built-in
devices, no inventory file) shows readings out of the box: in ``cyborg-like
device health show`` and, with the fleet series, on the API's own
``/metrics``, within a heartbeat of the agent's first; and the readings of
one heartbeat differ from the next's (issue 33).

Only the heartbeat is shortened (HEARTBEAT seconds instead of 10), so that
"within one heartbeat" and "two heartbeats apart" take seconds.
"""

import json
import re

import pytest
import requests

from harness import cloud
from tests.clients import clirun
from tests.clients.service import wait_for

HEARTBEAT = 2
START_TIMEOUT = 60
STOP_TIMEOUT = 30
GPU_READINGS = {'gpu_percent', 'memory_percent', 'memory_used_bytes',
                'memory_total_bytes', 'temperature_c', 'power_w'}
# Device series of the fleet, one per device or GPU
# (conductor/fleet_metrics.py).
DEVICE_SERIES = ('cyborg_like_device_temperature_celsius',
                 'cyborg_like_device_memory_used_bytes',
                 'DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_GPU_TEMP')


@pytest.fixture(scope='module')
def aio(tmp_path_factory):
    """A cyborg-like-all-in-one with its built-in fake devices."""
    workdir = str(tmp_path_factory.mktemp('aio-readings'))
    deployment = cloud.Cloud(
        workdir, layout=cloud.ALL_IN_ONE, host='aio-readings',
        auth_strategy=None,
        config={'agent': {'heartbeat_interval': HEARTBEAT}})
    with open(deployment.config_file) as f:
        assert 'inventory_file' not in f.read()     # the built-in devices
    service = deployment.services['all-in-one']
    service.start(START_TIMEOUT)
    try:
        yield deployment
    finally:
        returncode = service.stop(STOP_TIMEOUT)
        assert returncode == 0, service.tail()


def cli_json(aio, *args):
    result = clirun.in_process([clirun.CYBORG_LIKE, '--os-endpoint',
                                aio.api_url] + list(args) + ['-f', 'json'])
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


def devices(aio):
    found = requests.get(aio.api_url + '/v2/devices', timeout=10).json()
    return {d['type']: d['uuid'] for d in found['devices']}


def health(aio, device_uuid):
    """``cyborg-like device health show`` once it shows a reading."""
    shown = cli_json(aio, 'device', 'health', 'show', device_uuid)
    return shown if shown.get('utilization') else None


def metrics_text(aio):
    resp = requests.get(aio.api_url + '/metrics', timeout=10)
    resp.raise_for_status()
    return resp.text


def series(text, name, device_uuid):
    """The value of ``name`` for the device (its ``device_uuid`` label;
    dcgm-exporter's series may name it in ``UUID`` alone), or None."""
    found = re.search(r'^%s\{[^}]*\b(?:device_uuid|UUID)="%s"[^}]*\} (\S+)$'
                      % (re.escape(name), device_uuid), text, re.M)
    return None if found is None else float(found.group(1))


def test_health_show_and_metrics_have_readings_within_a_heartbeat(aio):
    by_type = wait_for(lambda: len(devices(aio)) == 2 and devices(aio),
                       timeout=START_TIMEOUT, what='the two devices')
    # The agent beats at once when it starts, then every HEARTBEAT: two of
    # them (and the conductor's batch) at most once the devices are known.
    bound = 2 * HEARTBEAT + 5
    gpu = wait_for(lambda: health(aio, by_type['GPU']), timeout=bound,
                   what='readings of the GPU in device health show')
    fpga = wait_for(lambda: health(aio, by_type['FPGA']), timeout=bound,
                    what='readings of the FPGA in device health show')
    assert gpu['health'] == 'healthy' and fpga['health'] == 'healthy'
    assert GPU_READINGS <= set(gpu['utilization']), gpu
    assert {'temperature_c', 'board_power_w'} <= set(fpga['utilization'])

    def device_series():
        text = metrics_text(aio)
        return all(series(text, name, by_type['GPU']) is not None
                   for name in DEVICE_SERIES) and text
    text = wait_for(device_series, timeout=bound,
                    what='device series on the API port\'s /metrics')
    assert series(text, 'cyborg_like_device_temperature_celsius',
                  by_type['FPGA']) is not None
    # Beside the API's own series: one port shows everything.
    assert 'cyborg_like_api_requests_in_flight ' in text
    assert 'cyborg_like_fleet_exporter 1.0' in text


def test_readings_change_from_one_heartbeat_to_the_next(aio):
    gpu_uuid = wait_for(lambda: devices(aio).get('GPU'),
                        timeout=START_TIMEOUT, what='the GPU')
    first = wait_for(lambda: health(aio, gpu_uuid),
                     timeout=2 * HEARTBEAT + 5, what='a GPU reading')

    def changed():
        now = health(aio, gpu_uuid)
        return now if now and now['utilization'] != first['utilization'] \
            else None
    later = wait_for(changed, timeout=3 * HEARTBEAT + 5,
                     what='the next heartbeat\'s readings')
    assert set(later['utilization']) == set(first['utilization'])
    history = cli_json(aio, 'device', 'health', 'history', gpu_uuid,
                       '--limit', '5')
    assert len(history) >= 2, history

