"""A real Prometheus scrapes the API and two conductors: the series carry
what the fake devices report, one conductor alone exports the fleet, the
alert rules load and every dashboard expression evaluates; queries written
for NVIDIA's dcgm-exporter read the GPU series and join them on ``UUID``.

Prometheus is Debian's package: installed here when ``prometheus`` is not
on PATH (as root; tools/run-integration-tests.sh installs it too), and
started by the test on a free port of 127.0.0.1 with its data in the
test's temporary directory. The Debian service is never started.
"""

import http.server
import json
import os
import shutil
import subprocess
import threading

import pytest
import requests

from tests import json_http

from .infra import BASE_INVENTORY
from .infra import free_port
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ALERTS = os.path.join(ROOT, 'etc', 'prometheus', 'cyborg-like-alerts.yml')
DASHBOARD = os.path.join(ROOT, 'etc', 'grafana', 'cyborg-like-fleet.json')
GPU_UTIL = {'gpu_percent': 37, 'memory_percent': 9,
            'memory_used_bytes': 3 * 1024 ** 3,
            'memory_total_bytes': 16 * 1024 ** 3,
            'temperature_c': 61, 'power_w': 70.5}
FPGA_UTIL = {'temperature_c': 44.5}
# The stand-in GPUs as the nvidia_gpu agent reports them: NVML uuid,
# index and minor number (not the index, as on hosts where they differ).
T4_UUID = 'GPU-3f0e5a2b-7c1d-4e9f-8a6b-0c2d4e6f8a1b'
T4_BOARD = {'uuid': T4_UUID, 'index': 1, 'minor': 1,
            'driver_version': '550.54.15'}
A100_UUID = 'GPU-1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f'
A100_BOARD = {'uuid': A100_UUID, 'index': 0, 'minor': 4,
              'driver_version': '550.54.15'}
A100_MODEL = 'NVIDIA A100-SXM4-40GB'
A100_UTIL = {'gpu_percent': 81, 'memory_used_bytes': 9 * 1024 ** 3,
             'memory_total_bytes': 40 * 1024 ** 3, 'temperature_c': 48,
             'power_w': 250, 'sm_clock_mhz': 1410,
             'mig_devices': {
                 'MIG-7e9a1c3e-5f7b-5d9f-8b2d-4f6a8c0e2b4d': {
                     'profile': '3g.20gb', 'gpu_instance_id': 1,
                     'memory_used_bytes': 5 * 1024 ** 3,
                     'memory_total_bytes': 20 * 1024 ** 3}}}


def _inventory():
    document = json.loads(json.dumps(BASE_INVENTORY))
    fpga, gpu = document['devices']
    fpga['health'] = {'healthy': True, 'utilization': FPGA_UTIL}
    gpu['health'] = {'healthy': True, 'utilization': GPU_UTIL}
    gpu['vendor_board_info'] = T4_BOARD
    a100 = json.loads(json.dumps(gpu))
    a100.update(model=A100_MODEL, pci_address='0000:3b:00.0',
                vendor_board_info=A100_BOARD,
                health={'healthy': True, 'utilization': A100_UTIL})
    a100['std_board_info']['device_id'] = '0x20b0'
    a100['deployables'][0].update(name='gpu1',
                                  pci_functions=['0000:3b:00.0'])
    document['devices'].append(a100)
    return document


class DcgmExporter:
    """What dcgm-exporter serves on a host with the stand-in GPUs (its
    text format and label order; a profiling field, which cyborg_like does
    not export), so that a query joining its series with ours on ``UUID``
    is run for real. dcgm-exporter itself needs a GPU and DCGM."""

    def __init__(self, hostname):
        line = ('DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="%d",UUID="%s",'
                'pci_bus_id="%s",device="nvidia%d",modelName="%s",'
                'Hostname="%s"} %s\n')
        body = ('# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the '
                'graphics engine is active.\n'
                '# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n'
                + line % (0, A100_UUID, '00000000:3B:00.0', 4, A100_MODEL,
                          hostname, '0.75')
                + line % (1, T4_UUID, '00000000:AF:00.0', 1, 'Tesla T4',
                          hostname, '0.25')).encode()

        class Handler(json_http.QuietHandler):
            def do_GET(self):
                self._answer(200, body, 'text/plain; version=0.0.4')

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.address = '127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture(scope='session')
def prometheus_bin():
    """``prometheus`` and ``promtool``, installed from Debian if absent."""
    if not shutil.which('prometheus'):
        if os.geteuid() != 0:
            pytest.fail('prometheus is not installed and installing it '
                        'needs root: apt-get install -y prometheus')
        # A source of this machine that cannot be fetched makes update
        # exit non-zero; the install is the verdict.
        subprocess.run(['apt-get', 'update', '-qq'], check=False)
        subprocess.run(['apt-get', 'install', '-y', '-qq', 'prometheus'],
                       check=True, env=dict(os.environ,
                                            DEBIAN_FRONTEND='noninteractive'))
    return shutil.which('prometheus'), shutil.which('promtool')


class Prometheus:
    def __init__(self, binary, workdir, targets):
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        config = os.path.join(workdir, 'prometheus.yml')
        with open(config, 'w') as f:
            json.dump({   # YAML is a superset of JSON
                'global': {'scrape_interval': '1s',
                           'evaluation_interval': '1s'},
                'rule_files': [ALERTS],
                'scrape_configs': [
                    {'job_name': job, 'static_configs': [
                        {'targets': addresses}]}
                    for job, addresses in targets.items()]}, f)
        self.log = open(os.path.join(workdir, 'prometheus.log'), 'w')
        self.process = subprocess.Popen(
            [binary, '--config.file=%s' % config,
             '--storage.tsdb.path=%s' % os.path.join(workdir, 'tsdb'),
             '--web.listen-address=127.0.0.1:%d' % self.port],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._ready, message='Prometheus did not become ready')

    def _ready(self):
        assert self.process.poll() is None, 'prometheus exited'
        try:
            return requests.get(self.url + '/-/ready', timeout=2).ok
        except requests.ConnectionError:
            return False

    def query(self, expr):
        """The result vector of instant query ``expr``; asserts success."""
        resp = requests.get(self.url + '/api/v1/query',
                            params={'query': expr}, timeout=10)
        body = resp.json()
        assert body['status'] == 'success', (expr, body)
        return body['data']['result']

    def value(self, expr):
        """The single value of ``expr``, or None while it has none."""
        result = self.query(expr)
        return float(result[0]['value'][1]) if len(result) == 1 else None

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture(scope='module')
def scraped(prometheus_bin, tmp_path_factory):
    """Two conductors, an agent and the API on PostgreSQL, scraped by a
    real Prometheus every second."""
    workdir = str(tmp_path_factory.mktemp('prometheus'))
    ports = {'conductor': free_port(), 'conductor2': free_port()}
    own = {name: '[metrics]\nconductor_listen_port = %d\n'
                 'fleet_cache_seconds = 1\n' % port
           for name, port in ports.items()}
    with running_deployment(
            'postgresql', workdir, conductors=2, inventory=_inventory(),
            service_config=own,
            wait_for_devices=lambda devices: len(devices) == 3) as dep:
        dcgm = DcgmExporter(dep.host)
        prometheus = Prometheus(prometheus_bin[0], workdir, {
            'cyborg-like-conductor': ['127.0.0.1:%d' % p
                                      for p in ports.values()],
            'cyborg-like-api': ['127.0.0.1:%d' % dep.api_port],
            'dcgm-exporter': [dcgm.address]})
        try:
            yield dep, prometheus
        finally:
            prometheus.stop()
            dcgm.stop()


def _eventually(prometheus, expr, wanted, timeout=30):
    return wait_for(lambda: prometheus.value(expr) == wanted or None,
                    timeout=timeout,
                    message='%s never was %s (last: %s)' % (
                        expr, wanted, prometheus.query(expr)))


def test_all_targets_are_up(scraped):
    dep, prometheus = scraped
    _eventually(prometheus, 'count(up == 1)', 4)
    _eventually(prometheus, 'count(up{job="cyborg-like-conductor"} == 1)', 2)


def test_device_series_are_what_the_devices_report(scraped):
    dep, prometheus = scraped
    dep.get('/v2/devices')
    host = dep.host
    t4 = 'Hostname="%s",modelName="Tesla T4"' % host
    _eventually(prometheus, 'DCGM_FI_DEV_GPU_UTIL{%s}' % t4, 37)
    assert prometheus.value('DCGM_FI_DEV_FB_USED{%s}' % t4) == 3072
    assert prometheus.value('DCGM_FI_DEV_FB_FREE{%s}' % t4) == 13 * 1024
    assert prometheus.value('DCGM_FI_DEV_POWER_USAGE{%s}' % t4) == 70.5
    assert prometheus.value('DCGM_FI_DEV_GPU_TEMP{modelName="Tesla T4"}'
                            ) == 61
    assert prometheus.value(
        'cyborg_like_device_temperature_celsius{type="FPGA",hostname="%s"}'
        % host) == 44.5
    assert prometheus.value(
        'cyborg_like_device_utilization_ratio{model="Tesla T4"}') == 0.37
    _eventually(prometheus, 'sum(cyborg_like_device_health{state="healthy"'
                ',hostname="%s"})' % host, 3)
    assert prometheus.value('cyborg_like_host_up{hostname="%s"}'
                            % host) == 1
    assert prometheus.value(
        'cyborg_like_resource_class_capacity{resource_class="FPGA"}') == 3
    assert prometheus.value(
        'cyborg_like_resource_class_free{resource_class="PGPU"}') == 2
    assert prometheus.value('sum(cyborg_like_device_bound)') == 0
    assert prometheus.value('sum(cyborg_like_device_service{state="serving"'
                            ',hostname="%s"})' % host) == 3
    assert prometheus.value(
        'cyborg_like_health_drain_breaker_open{scope="fleet"}') == 0
    # Readings ingested, summed over both conductors.
    assert prometheus.value(
        'sum(cyborg_like_heartbeat_readings_ingested_total)') >= 3


def test_queries_written_for_dcgm_exporter(scraped):
    """dcgm-exporter's label names with its values: its dashboards'
    queries read ours, and its series join ours on UUID."""
    dep, prometheus = scraped
    host = dep.host
    ours = '{job="cyborg-like-conductor"}'

    def by_model():
        result = prometheus.query('avg by (modelName) '
                                  '(DCGM_FI_DEV_GPU_UTIL%s)' % ours)
        return {r['metric']['modelName']: float(r['value'][1])
                for r in result}
    wanted = {'Tesla T4': 37, A100_MODEL: 81}
    wait_for(lambda: by_model() == wanted or None,
             message='avg by (modelName) never was %s' % wanted)
    devices = {d['model']: d['uuid'] for d in dep.list_ok('devices')}
    series = {r['metric']['UUID']: r['metric'] for r in prometheus.query(
        'DCGM_FI_DEV_GPU_UTIL' + ours)}
    assert set(series) == {T4_UUID, A100_UUID}
    for uuid, gpu, device, bus_id, model in (
            (T4_UUID, '1', 'nvidia1', '00000000:AF:00.0', 'Tesla T4'),
            (A100_UUID, '0', 'nvidia4', '00000000:3B:00.0', A100_MODEL)):
        labels = series[uuid]
        assert (labels['gpu'], labels['device'], labels['pci_bus_id'],
                labels['modelName'], labels['Hostname'],
                labels['device_uuid']) == (gpu, device, bus_id, model, host,
                                           devices[model])
        assert labels['DCGM_FI_DRIVER_VERSION'] == '550.54.15'
        # Empty labels are no labels: a whole GPU has no GPU_I_*, and a
        # free one no project_id.
        assert not {'GPU_I_ID', 'GPU_I_PROFILE', 'project_id'} & set(labels)

    # Joined on UUID (and every other identity label dcgm-exporter sets):
    # its graphics engine activity, labelled with our device uuid.
    join = ('DCGM_FI_PROF_GR_ENGINE_ACTIVE + on (UUID, gpu, '
            'device, pci_bus_id, modelName, Hostname) group_left(device_uuid)'
            ' (0 * DCGM_FI_DEV_GPU_UTIL%s)' % ours)
    joined = wait_for(lambda: prometheus.query(join) or None,
                      message='the join on UUID returned nothing')
    assert sorted((r['metric']['UUID'], r['metric']['device_uuid'],
                   float(r['value'][1])) for r in joined) == sorted([
        (A100_UUID, devices[A100_MODEL], 0.75),
        (T4_UUID, devices['Tesla T4'], 0.25)])
    # A field the agent reads only where NVML answers it: the A100's.
    assert [(r['metric']['UUID'], float(r['value'][1])) for r in
            prometheus.query('DCGM_FI_DEV_SM_CLOCK' + ours)] == [
        (A100_UUID, 1410)]

    # A MIG instance: its own framebuffer, under its GPU's identity.
    mig = prometheus.query('DCGM_FI_DEV_FB_USED{GPU_I_PROFILE="3g.20gb"}')
    assert [(r['metric']['UUID'], r['metric']['GPU_I_ID'],
             r['metric']['device'], float(r['value'][1])) for r in mig] == [
        (A100_UUID, '1', 'nvidia4', 5 * 1024)]


def test_one_conductor_exports_the_fleet(scraped):
    dep, prometheus = scraped
    # Both conductors scraped (the second may be scraped a beat later than
    # the first: CI run of stop 35), one of them the exporter.
    _eventually(prometheus, 'count(cyborg_like_fleet_exporter)', 2)
    _eventually(prometheus, 'sum(cyborg_like_fleet_exporter)', 1)
    # The fleet series come from one instance only: nothing counted twice.
    _eventually(prometheus, 'count(count by (instance) '
                '(cyborg_like_device_health))', 1)
    assert prometheus.value('count(cyborg_like_device_info)') == 3
    exporting = prometheus.query('cyborg_like_fleet_exporter == 1')
    fleet = prometheus.query('count by (instance) (cyborg_like_host_up)')
    assert [r['metric']['instance'] for r in exporting] == \
        [r['metric']['instance'] for r in fleet]


def test_api_series_by_route_template(scraped):
    dep, prometheus = scraped
    devices = dep.list_ok('devices')
    dep.get('/v2/devices/%s' % devices[0]['uuid'])
    wait_for(lambda: (prometheus.value(
        'sum(cyborg_like_api_request_duration_seconds_count'
        '{route="/v2/devices/{uuid}",status="200"})') or 0) > 0 or None,
        message='no API request of /v2/devices/{uuid} was scraped')
    routes = {r['metric']['route'] for r in prometheus.query(
        'cyborg_like_api_request_duration_seconds_count')}
    assert '/v2/devices' in routes
    assert not [r for r in routes if devices[0]['uuid'] in r]
    assert prometheus.value('sum(cyborg_like_api_requests_in_flight)') \
        is not None


def test_alert_rules_load(scraped, prometheus_bin):
    dep, prometheus = scraped
    check = subprocess.run([prometheus_bin[1], 'check', 'rules', ALERTS],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    body = requests.get(prometheus.url + '/api/v1/rules', timeout=10).json()
    assert body['status'] == 'success'
    rules = [rule for group in body['data']['groups']
             for rule in group['rules']]
    names = {rule['name'] for rule in rules}
    assert {'CyborgLikeHostDown', 'CyborgLikeDeviceUnhealthy',
            'CyborgLikeDeviceDrained', 'CyborgLikeOperationFailed',
            'CyborgLikeDrainCircuitOpen'} <= names
    wait_for(lambda: all(rule.get('health') == 'ok' for rule in requests.get(
        prometheus.url + '/api/v1/rules', timeout=10).json()['data'][
            'groups'][0]['rules']) or None, timeout=15,
        message='an alert rule does not evaluate')


def test_every_dashboard_expression_evaluates(scraped):
    dep, prometheus = scraped
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    exprs = [target['expr'] for panel in dashboard['panels']
             for target in panel.get('targets', ())]
    assert exprs
    for expr in exprs:
        prometheus.query(expr)      # asserts status success
    # The capacity stat shows the fleet once, not once per conductor:
    # region0 (1) and region1 (two functions: 2) and the two GPUs (2).
    # (Waited for: in a random order this may be the module's first test,
    # before a scrape of the conductor.)
    capacity = wait_for(lambda: prometheus.value(
        'sum(cyborg_like_resource_class_capacity)'),
        message='no capacity was scraped')
    assert capacity == 5
