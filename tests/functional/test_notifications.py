"""What the conductor really sends as versioned notifications, compared
with the samples of docs/notifications.md: event type, priority, payload
name and version, fields and the type of each value. A cloud of
tests/functional/cloud.py with oslo.messaging's test driver; the
changes are driven through the real conductor and agent (fake driver)."""

import pytest

from cyborg_like.common import states
from tests.functional import cloud as cloud_module
from tests.functional import test_health as health
from tests.functional import test_mig_layout as mig
from tests.unit.test_notifications import documented

ADMIN = health.ADMIN


def sent(event_type=None):
    """[(priority, payload)] of the versioned notifications sent."""
    from oslo_messaging.notify import _impl_test
    return [(priority, message['payload'])
            for _ctxt, message, priority, _retry in _impl_test.NOTIFICATIONS
            if 'cyborg_like_object.name' in message['payload'] and
            (event_type is None or message['event_type'] == event_type)]


def like_sample(event_type, priority, payload):
    """The notification has its sample's shape: the same priority, name,
    version and fields, each value of the sample's type (or null where
    the docs say it may be)."""
    sample_priority, sample = documented()[event_type]
    assert priority == sample_priority, event_type
    for key in ('cyborg_like_object.name', 'cyborg_like_object.namespace',
                'cyborg_like_object.version'):
        assert payload[key] == sample[key], (event_type, key)
    data = payload['cyborg_like_object.data']
    expected = sample['cyborg_like_object.data']
    assert list(data) == list(expected), event_type
    for field, value in data.items():
        if value is not None and expected[field] is not None:
            assert type(value) is type(expected[field]), (event_type, field)
    return data


def told(cloud, event_type, count=1):
    """The data of the first ``count`` ``event_type`` notifications, each
    checked against its sample (sent after the commit: waited for)."""
    found = cloud.wait_for(lambda: len(sent(event_type)) >= count and
                           sent(event_type))
    return [like_sample(event_type, priority, payload)
            for priority, payload in found[:count]]


@pytest.fixture
def test_driver():
    from oslo_messaging.notify import _impl_test
    _impl_test.reset()
    yield {('oslo_messaging_notifications', 'driver'): ['test'],
           ('notifications', 'notification_format'): 'versioned'}
    _impl_test.reset()


def test_bindings_and_a_device_failing_and_recovering(monkeypatch,
                                                      test_driver):
    with health.gpus_falling_sick(monkeypatch, {
            **test_driver, ('health', 'recovery_checks'): 1}) as (
                cloud, a100, rp_uuid, (first, second)):
        tracker, api = cloud.services[1].tracker, cloud.conductor_api
        instance = '30000000-0000-0000-0000-000000000002'
        assert health._bind(cloud, first, rp_uuid, instance)['state'] == \
            states.BOUND
        [bound] = told(cloud, 'accelerator_request.bound')
        assert (bound['uuid'], bound['state'], bound['instance_uuid']) == (
            first['uuid'], states.BOUND, instance)

        health.SwitchableGPUDriver.sick = {'A100'}
        tracker.heartbeat()
        [unhealthy] = told(cloud, 'device.unhealthy')
        [drained] = told(cloud, 'device.drained')
        assert (unhealthy['device_uuid'], drained['device_uuid'],
                drained['service_state']) == (a100['uuid'], a100['uuid'],
                                              'drained')
        other = '30000000-0000-0000-0000-000000000003'
        assert health._bind(cloud, second, rp_uuid, other)['state'] == \
            states.BIND_FAILED
        [failed] = told(cloud, 'accelerator_request.bind_failed')
        assert failed['uuid'] == second['uuid']
        assert 'drained' in failed['state_reason']

        health.SwitchableGPUDriver.sick = set()
        tracker.heartbeat()
        [back] = told(cloud, 'device.back_in_service')
        assert (back['device_uuid'], back['service_state']) == (
            a100['uuid'], 'serving')

        api.unbind_arqs(ADMIN, [first['uuid']])
        [unbound] = told(cloud, 'accelerator_request.unbound')
        assert (unbound['uuid'], unbound['state']) == (first['uuid'],
                                                       states.UNBOUND)
        api.delete_arqs(ADMIN, uuids=[first['uuid'], second['uuid']])
        deleted = told(cloud, 'accelerator_request.deleted', 2)
        assert sorted(d['uuid'] for d in deleted) == sorted(
            [first['uuid'], second['uuid']])


def test_an_operation_starts_and_ends(test_driver):
    cloud = cloud_module.Cloud(overrides={
        **test_driver, ('conductor', 'mig_layout_timeout'): 30}).start()
    try:
        a100 = mig.gpu(cloud)
        status, started = mig.apply(cloud, a100['uuid'], ['7g.80gb'])
        assert status == 202, started
        uuid = started['operation']['uuid']
        [start] = told(cloud, 'operation.start')
        [end] = told(cloud, 'operation.end')
        assert (start['uuid'], start['type'], start['state']) == (
            uuid, 'mig_layout', 'running')
        assert (end['uuid'], end['state'], end['target_uuid']) == (
            uuid, 'succeeded', a100['uuid'])
    finally:
        cloud.stop()


def test_an_unversioned_cloud_sends_no_versioned_notification(test_driver):
    cloud = cloud_module.Cloud(overrides={
        **test_driver,
        ('notifications', 'notification_format'): 'unversioned',
        ('conductor', 'mig_layout_timeout'): 30}).start()
    try:
        status, started = mig.apply(cloud, mig.gpu(cloud)['uuid'],
                                    ['7g.80gb'])
        assert status == 202, started
        mig.finished(cloud, started['operation']['uuid'])
        assert sent() == []
    finally:
        cloud.stop()
