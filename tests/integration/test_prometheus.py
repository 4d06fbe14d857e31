"""A real Prometheus scrapes the API and two conductors: the series carry
what the fake devices report, one conductor alone exports the fleet, the
alert rules load and every dashboard expression evaluates.

Prometheus is Debian's package: installed here when ``prometheus`` is not
on PATH (as root; tools/run-integration-tests.sh installs it too), and
started by the test on a free port of 127.0.0.1 with its data in the
test's temporary directory. The Debian service is never started.
"""

import json
import os
import shutil
import subprocess

import pytest
import requests

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


def _inventory():
    document = json.loads(json.dumps(BASE_INVENTORY))
    fpga, gpu = document['devices']
    fpga['health'] = {'healthy': True, 'utilization': FPGA_UTIL}
    gpu['health'] = {'healthy': True, 'utilization': GPU_UTIL}
    return document


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
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        prometheus = Prometheus(prometheus_bin[0], workdir, {
            'cyborg-like-conductor': ['127.0.0.1:%d' % p
                                      for p in ports.values()],
            'cyborg-like-api': ['127.0.0.1:%d' % dep.api_port]})
        try:
            yield dep, prometheus
        finally:
            prometheus.stop()


def _eventually(prometheus, expr, wanted, timeout=30):
    return wait_for(lambda: prometheus.value(expr) == wanted or None,
                    timeout=timeout,
                    message='%s never was %s (last: %s)' % (
                        expr, wanted, prometheus.query(expr)))


def test_all_targets_are_up(scraped):
    dep, prometheus = scraped
    _eventually(prometheus, 'count(up == 1)', 3)
    _eventually(prometheus, 'count(up{job="cyborg-like-conductor"} == 1)', 2)


def test_device_series_are_what_the_devices_report(scraped):
    dep, prometheus = scraped
    dep.get('/v2/devices')
    host = dep.host
    _eventually(prometheus, 'DCGM_FI_DEV_GPU_UTIL{Hostname="%s"}' % host, 37)
    assert prometheus.value('DCGM_FI_DEV_FB_USED{Hostname="%s"}'
                            % host) == 3072
    assert prometheus.value('DCGM_FI_DEV_FB_FREE{Hostname="%s"}'
                            % host) == 13 * 1024
    assert prometheus.value('DCGM_FI_DEV_POWER_USAGE{Hostname="%s"}'
                            % host) == 70.5
    assert prometheus.value('DCGM_FI_DEV_GPU_TEMP{modelName="Tesla T4"}'
                            ) == 61
    assert prometheus.value(
        'cyborg_like_device_temperature_celsius{type="FPGA",hostname="%s"}'
        % host) == 44.5
    assert prometheus.value(
        'cyborg_like_device_utilization_ratio{type="GPU"}') == 0.37
    _eventually(prometheus, 'sum(cyborg_like_device_health{state="healthy"'
                ',hostname="%s"})' % host, 2)
    assert prometheus.value('cyborg_like_host_up{hostname="%s"}'
                            % host) == 1
    assert prometheus.value(
        'cyborg_like_resource_class_capacity{resource_class="FPGA"}') == 3
    assert prometheus.value(
        'cyborg_like_resource_class_free{resource_class="PGPU"}') == 1
    assert prometheus.value('sum(cyborg_like_device_bound)') == 0
    assert prometheus.value('sum(cyborg_like_device_service{state="serving"'
                            ',hostname="%s"})' % host) == 2
    assert prometheus.value(
        'cyborg_like_health_drain_breaker_open{scope="fleet"}') == 0
    # Readings ingested, summed over both conductors.
    assert prometheus.value(
        'sum(cyborg_like_heartbeat_readings_ingested_total)') >= 2


def test_one_conductor_exports_the_fleet(scraped):
    dep, prometheus = scraped
    # Both conductors scraped (the second may be scraped a beat later than
    # the first: CI run of stop 35), one of them the exporter.
    _eventually(prometheus, 'count(cyborg_like_fleet_exporter)', 2)
    _eventually(prometheus, 'sum(cyborg_like_fleet_exporter)', 1)
    # The fleet series come from one instance only: nothing counted twice.
    _eventually(prometheus, 'count(count by (instance) '
                '(cyborg_like_device_health))', 1)
    assert prometheus.value('count(cyborg_like_device_info)') == 2
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
    # region0 (1) and region1 (two functions: 2) and the GPU (1).
    # (Waited for: in a random order this may be the module's first test,
    # before a scrape of the conductor.)
    capacity = wait_for(lambda: prometheus.value(
        'sum(cyborg_like_resource_class_capacity)'),
        message='no capacity was scraped')
    assert capacity == 4
