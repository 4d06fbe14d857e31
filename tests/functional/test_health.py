"""Health from heartbeats: stored, shown, and keeping bad devices unbound."""

import contextlib

import webob

from cyborg_like.common import context
from cyborg_like.common import states
from cyborg_like.drivers import base
from cyborg_like.drivers import fake
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()


class SickGPUDriver(fake.FakeDriver, base.HealthReporting):
    """The fake inventory, with the A100 reporting uncorrectable ECC and
    the T4 unable to check its temperature."""

    def health(self):
        readings = []
        for device in self.discover():
            sick = device.model == 'A100'
            readings.append(base.DeviceHealth(
                device.controlpath_id, healthy=not sick,
                reasons=['3 uncorrectable ECC errors'] if sick else [],
                utilization={'gpu_percent': 41, 'memory_used_mb': 1024},
                unchecked=['temperature'] if device.model == 'T4' else []))
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
        assert body['unchecked'] == []
        assert body['utilization'] == {'gpu_percent': 41,
                                       'memory_used_mb': 1024}
        assert body['history'][0]['healthy'] is False

        status, t4 = _get(cloud, '/v2/devices/%s/health?history=1'
                          % devices['T4']['uuid'])
        assert (status, t4['health'], len(t4['history'])) == \
            (200, 'healthy', 1)
        # Healthy, and saying what it could not look at.
        assert t4['unchecked'] == ['temperature']
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


class SwitchableGPUDriver(fake.FakeDriver, base.HealthReporting):
    """The fake inventory; the models in ``sick`` report an Xid."""

    sick = set()

    def health(self):
        return [base.DeviceHealth(
            device.controlpath_id, healthy=device.model not in self.sick,
            reasons=['Xid 79 (GPU has fallen off the bus)']
            if device.model in self.sick else [])
            for device in self.discover()]


def _notifications(event_type):
    """(payload, priority) of the notifications of ``event_type`` sent."""
    from oslo_messaging.notify import _impl_test
    return [(message['payload'], priority)
            for _ctxt, message, priority, _retry in _impl_test.NOTIFICATIONS
            if message['event_type'] == event_type]


@contextlib.contextmanager
def gpus_falling_sick(monkeypatch, overrides):
    """A functional cloud whose fake GPUs are sick while their model is in
    SwitchableGPUDriver.sick, with the A100 seen healthy, a profile 'gpu'
    and two ARQs of it. Yields (cloud, the A100, its rp_uuid, the ARQs)."""
    from cyborg_like.conf import CONF
    SwitchableGPUDriver.sick = set()
    monkeypatch.setattr('cyborg_like.agent.resource_tracker.load_drivers',
                        lambda conf: {'fake': SwitchableGPUDriver(CONF)})
    cloud = cloud_module.Cloud(overrides=overrides).start()
    try:
        api = cloud.conductor_api
        a100 = next(d for d in cloud.list_devices() if d['model'] == 'A100')
        rp_uuid = next(d['rp_uuid'] for d in api.list_deployables(
            ADMIN, {}, 10, None, 'created_at', 'asc')
            if d['device_id'] == a100['id'])
        api.create_device_profile(ADMIN, 'gpu', [{'resources:PGPU': '1'}],
                                  None)
        arqs = [api.create_arqs(ADMIN, 'gpu', None)[0] for _ in range(2)]
        cloud.services[1].tracker.heartbeat()
        cloud.wait_for(
            lambda: _get(cloud, '/v2/devices/%s/health' % a100['uuid'])[1]
            ['health'] == 'healthy')
        yield cloud, a100, rp_uuid, arqs
    finally:
        cloud.stop()
        SwitchableGPUDriver.sick = set()


def test_a_failing_bound_device_is_drained_told_and_returned(monkeypatch):
    from oslo_messaging.notify import _impl_test
    _impl_test.reset()
    with gpus_falling_sick(monkeypatch, {
            ('oslo_messaging_notifications', 'driver'): ['test'],
            ('health', 'recovery_checks'): 2}) as (
                cloud, a100, rp_uuid, (first, second)):
        tracker = cloud.services[1].tracker
        api = cloud.conductor_api
        instance = '30000000-0000-0000-0000-000000000002'
        other = '30000000-0000-0000-0000-000000000003'
        _bind(cloud, first, rp_uuid, instance)
        status, shown = _get(cloud, '/v2/accelerator_requests/%s'
                             % first['uuid'])
        assert (shown['state'], shown['device_health']) == (
            'Bound', 'healthy')

        # The bound GPU falls off the bus.
        SwitchableGPUDriver.sick = {'A100'}
        tracker.heartbeat()
        health = cloud.wait_for(lambda: _drained(cloud, a100['uuid']))
        assert health['reasons'] == ['Xid 79 (GPU has fallen off the bus)']
        status, listed = _get(cloud, '/v2/accelerator_requests'
                                     '?device_health=unhealthy')
        assert [(a['uuid'], a['instance_uuid'], a['device_health'])
                for a in listed['arqs']] == [
            (first['uuid'], instance, 'unhealthy')]
        # Sent after the commit the API shows: waited for (CI of this
        # session read them a moment too early once, under load).
        [told] = cloud.wait_for(
            lambda: _notifications('accelerator.arq.device_unhealthy'))
        assert (told[0]['arq_uuid'], told[0]['instance_uuid'],
                told[0]['device_uuid'], told[1]) == (
            first['uuid'], instance, a100['uuid'], 'ERROR')
        [drained] = cloud.wait_for(
            lambda: _notifications('accelerator.device.service.changed'))
        assert (drained[0]['event'], drained[0]['service_state']) == (
            'drain', 'drained')
        # Nothing more is bound to it.
        assert _bind(cloud, second, rp_uuid, other)['state'] == \
            states.BIND_FAILED
        status, _ = _get(cloud, '/v2/accelerator_requests'
                                '?device_health=sick')
        assert status == 400

        # Healthy again: back in service after two clean readings.
        SwitchableGPUDriver.sick = set()
        tracker.heartbeat()
        cloud.wait_for(lambda: _get(
            cloud, '/v2/devices/%s/health' % a100['uuid'])[1]
            ['healthy_checks'] == 1)
        tracker.heartbeat()
        health = cloud.wait_for(lambda: _serving(cloud, a100['uuid']))
        assert health['health'] == 'healthy'
        changes = cloud.wait_for(lambda: len(_notifications(
            'accelerator.device.service.changed')) >= 2 and _notifications(
            'accelerator.device.service.changed'))
        assert [payload['event'] for payload, _priority in changes] == [
            'drain', 'recover']
        # Its workload gave it back: the next one gets it.
        api.unbind_arqs(ADMIN, [first['uuid'], second['uuid']])
        assert _bind(cloud, second, rp_uuid, other)['state'] == \
            states.BOUND
        SwitchableGPUDriver.sick = set()


def _bind(cloud, arq, rp_uuid, instance):
    cloud.conductor_api.bind_arqs(ADMIN, {arq['uuid']: {
        'hostname': cloud_module.HOST, 'device_rp_uuid': rp_uuid,
        'instance_uuid': instance, 'project_id': None}})

    def resolved():
        found = cloud.conductor_api.get_arq(ADMIN, arq['uuid'])
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(resolved)


def _drained(cloud, uuid):
    body = _get(cloud, '/v2/devices/%s/health' % uuid)[1]
    return body if body['service_state'] == 'drained' else None


def _serving(cloud, uuid):
    body = _get(cloud, '/v2/devices/%s/health' % uuid)[1]
    return body if body['service_state'] == 'serving' else None
