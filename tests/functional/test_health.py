"""Health from heartbeats: stored, shown, and keeping bad devices unbound."""

import webob

from cyborg_like.common import context
from cyborg_like.common import states
from cyborg_like.drivers import base
from cyborg_like.drivers import fake
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()


class SickGPUDriver(fake.FakeDriver, base.HealthReporting):
    """The fake inventory, with the A100 reporting uncorrectable ECC."""

    def health(self):
        readings = []
        for device in self.discover():
            sick = device.model == 'A100'
            readings.append(base.DeviceHealth(
                device.controlpath_id, healthy=not sick,
                reasons=['3 uncorrectable ECC errors'] if sick else [],
                utilization={'gpu_percent': 41, 'memory_used_mb': 1024}))
        return readings


def _get(cloud, path):
    response = webob.Request.blank(path).get_response(cloud.app)
    return response.status_int, response.json


def test_health_reaches_the_api_and_blocks_binding(monkeypatch):
    from cyborg_like.conf import CONF
    cloud = cloud_module.Cloud()
    monkeypatch.setattr('cyborg_like.agent.resource_tracker.load_drivers',
                        lambda conf: {'fake': SickGPUDriver(CONF)})
    cloud.start()
    try:
        tracker = cloud.services[1].tracker
        tracker.heartbeat()
        devices = {d['model']: d for d in cloud.list_devices()}

        def a100_health():
            status, body = _get(cloud, '/v2/devices/%s/health'
                                % devices['A100']['uuid'])
            return body if body['health'] == 'unhealthy' else None
        body = cloud.wait_for(a100_health)
        assert body['reasons'] == ['3 uncorrectable ECC errors']
        assert body['utilization'] == {'gpu_percent': 41,
                                       'memory_used_mb': 1024}
        assert body['history'][0]['healthy'] is False

        status, t4 = _get(cloud, '/v2/devices/%s/health?history=1'
                          % devices['T4']['uuid'])
        assert (status, t4['health'], len(t4['history'])) == \
            (200, 'healthy', 1)
        status, _ = _get(cloud, '/v2/devices/%s/health?history=x'
                         % devices['T4']['uuid'])
        assert status == 400

        api = cloud.conductor_api
        api.create_device_profile(ADMIN, 'gpu', [{'resources:PGPU': '1'}],
                                  None)
        [arq] = api.create_arqs(ADMIN, 'gpu', None)
        deployable = next(
            d for d in api.list_deployables(ADMIN, {}, 10, None,
                                            'created_at', 'asc')
            if d['device_id'] == devices['A100']['id'])
        api.bind_arqs(ADMIN, {arq['uuid']: {
            'hostname': cloud_module.HOST,
            'device_rp_uuid': deployable['rp_uuid'],
            'instance_uuid': '30000000-0000-0000-0000-000000000001',
            'project_id': None}})

        def resolved():
            found = api.get_arq(ADMIN, arq['uuid'])
            return found if found['state'] in states.RESOLVED else None
        result = cloud.wait_for(resolved)
        assert result['state'] == states.BIND_FAILED
        assert 'unhealthy' in result['state_reason']
    finally:
        cloud.stop()


def test_hosts_are_listed(cloud):
    status, body = _get(cloud, '/v2/hosts')
    assert status == 200
    assert [(h['hostname'], h['state']) for h in body['hosts']] == [
        (cloud_module.HOST, 'up')]
