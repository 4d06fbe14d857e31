"""Metrics of a running service: the conductor's port and the API's
/metrics (public, route templates only)."""

import re

from prometheus_client.parser import text_string_to_metric_families
import requests
import webob

from harness import infra
from tests.functional import cloud as cloud_module

UTIL = {'gpu_percent': 37, 'memory_percent': 9,
        'memory_used_bytes': 3 * 1024 ** 3,
        'memory_total_bytes': 80 * 1024 ** 3,
        'temperature_c': 61, 'power_w': 70.5}
UUID_RE = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                     r'[0-9a-f]{12}')


def _samples(text):
    return [s for family in text_string_to_metric_families(text)
            for s in family.samples]


def _one(samples, name, **labels):
    found = [s.value for s in samples if s.name == name
             and set(labels.items()) <= set(s.labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_conductor_serves_process_and_fleet_series(tmp_path):
    inventory = cloud_module.inventory_copy(tmp_path)

    def with_health(devices):
        devices[1]['health'] = {'healthy': True, 'utilization': UTIL}
    cloud_module.rewrite_inventory(inventory, with_health)
    port = infra.free_port()
    cloud = cloud_module.Cloud(str(inventory), overrides={
        ('metrics', 'conductor_listen_port'): port,
        ('metrics', 'fleet_cache_seconds'): 0}).start()
    try:
        a100 = [d for d in cloud.list_devices() if d['model'] == 'A100'][0]

        def scraped():
            cloud.services[1].tracker.heartbeat()
            text = requests.get('http://127.0.0.1:%d/metrics' % port,
                                timeout=10).text
            samples = _samples(text)
            return samples if [s for s in samples if s.name ==
                               'DCGM_FI_DEV_GPU_UTIL'] else None
        samples = cloud.wait_for(scraped)
        gpu = dict(UUID=a100['uuid'], modelName='A100',
                   Hostname=cloud_module.HOST)
        assert _one(samples, 'DCGM_FI_DEV_GPU_UTIL', **gpu) == 37
        assert _one(samples, 'DCGM_FI_DEV_FB_USED', **gpu) == 3 * 1024
        assert _one(samples, 'DCGM_FI_DEV_FB_FREE', **gpu) == 77 * 1024
        assert _one(samples, 'cyborg_like_device_health',
                    device_uuid=a100['uuid'], state='healthy') == 1
        assert _one(samples, 'cyborg_like_fleet_exporter') == 1
        assert _one(samples, 'cyborg_like_host_up',
                    hostname=cloud_module.HOST) == 1
        assert _one(samples, 'cyborg_like_resource_class_capacity',
                    resource_class='PGPU') == 2
        assert _one(samples, 'cyborg_like_resource_class_free',
                    resource_class='FPGA') == 2
        # Counted once the flush that wrote them returned (a scrape may
        # come between its commit and its count).
        def readings_counted():
            return [s.value for s in scraped() or () if s.name ==
                    'cyborg_like_heartbeat_readings_ingested_total'
                    and s.value >= 1]
        assert cloud.wait_for(readings_counted)
    finally:
        cloud.stop()
    # Stopped with the conductor.
    try:
        requests.get('http://127.0.0.1:%d/metrics' % port, timeout=2)
    except requests.ConnectionError:
        pass
    else:
        raise AssertionError('the metrics port is still served')


def test_api_metrics_are_public_and_hold_no_identifiers():
    cloud = cloud_module.Cloud(overrides={
        ('api', 'auth_strategy'): 'keystone',
        ('keystone_authtoken', 'www_authenticate_uri'):
            'http://127.0.0.1:1/identity'}).start()
    try:
        def get(path):
            return webob.Request.blank(path).get_response(cloud.app)
        assert get('/v2/devices/%s' % ('1' * 8 + '-1111-1111-1111-'
                                       + '1' * 12)).status_int == 401
        assert get('/').status_int == 200
        response = get('/metrics')
        assert response.status_int == 200
        assert response.content_type.startswith('text/plain')
        samples = _samples(response.text)
        routes = {s.labels['route'] for s in samples
                  if 'route' in s.labels}
        assert '/v2/devices/{uuid}' in routes
        assert '/' in routes
        assert not UUID_RE.search(response.text)
        assert _one(samples, 'cyborg_like_api_request_duration_seconds_count',
                    route='/v2/devices/{uuid}', method='GET',
                    status='401') >= 1
        labels = {name for s in samples for name in s.labels}
        assert labels <= {'route', 'method', 'status', 'le'}
        assert get('/metrics').status_int == 200
        post = webob.Request.blank('/metrics', method='POST')
        assert post.get_response(cloud.app).status_int == 405
    finally:
        cloud.stop()
