"""The audit trail through the whole service in one process: with
``[audit] enabled`` asked for under noauth, a bind and an unbind through
the real handlers are audited as such (the handler's note reaches the
event). Events come from oslo.messaging's ``test`` driver; against the real
Keystone and RabbitMQ: tests/integration/test_audit.py."""

from oslo_messaging.notify import _impl_test

from cyborg_like.common import context
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
INSTANCE = '10000000-0000-0000-0000-0000000000a1'


def _responses():
    return [message['payload'] for _c, message, _p, _r
            in _impl_test.NOTIFICATIONS
            if message['event_type'] == 'audit.http.response']


def _bind_ops(cloud, rp_uuid):
    return [{'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': INSTANCE}]


def _t4_rp_uuid(cloud):
    t4 = next(d for d in cloud.list_devices() if d['model'] == 'T4')
    return next(d['rp_uuid'] for d in cloud.conductor_api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc')
        if d['device_id'] == t4['id'])


def test_bind_and_unbind_are_audited_when_asked_under_noauth():
    _impl_test.reset()
    cloud = cloud_module.Cloud(overrides={
        ('audit', 'enabled'): True,
        ('oslo_messaging_notifications', 'driver'): ['test']}).start()
    try:
        assert cloud.call('POST', '/v2/device_profiles', {
            'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]})[0] == 201
        status, made = cloud.call('POST', '/v2/accelerator_requests',
                                  {'device_profile_name': 'gpu'})
        assert status == 201
        arq = made['arqs'][0]['uuid']
        headers = {'X-User-Id': 'u-nova', 'X-Project-Id': 'p-service'}
        assert cloud.call('PATCH', '/v2/accelerator_requests/%s' % arq,
                          _bind_ops(cloud, _t4_rp_uuid(cloud)),
                          headers)[0] == 202
        cloud.wait_for(lambda: cloud.conductor_api.get_arq(
            ADMIN, arq)['state'] == 'Bound', timeout=30)
        assert cloud.call('PATCH', '/v2/accelerator_requests', {arq: [
            {'op': 'remove', 'path': '/hostname'}]}, headers)[0] == 202
        assert cloud.call('GET', '/v2/accelerator_requests/%s' % arq)[0] \
            == 200
    finally:
        cloud.stop()
    created, bound, unbound = _responses()[1:]
    assert (created['action'], created['target']['id']) == ('create', arq)
    for event, action in ((bound, 'update/bind'),
                          (unbound, 'update/unbind')):
        assert (event['action'], event['outcome'], event['target']['id'],
                event['reason']['reasonCode']) == (action, 'success', arq,
                                                   '202')
        # noauth: the caller is who its headers claim.
        assert (event['initiator']['id'],
                event['initiator']['project_id']) == ('u-nova', 'p-service')
    # No service catalog under noauth: the type comes from the path.
    assert bound['target']['typeURI'] == \
        'service/accelerator/accelerator_requests/accelerator_request'
    assert unbound['target']['typeURI'] == \
        'service/accelerator/accelerator_requests'
