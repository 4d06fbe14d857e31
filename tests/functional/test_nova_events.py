"""Nova hears when bindings end, and is asked to shelve what a lease
needs back: tests/fake_nova.py stands in for Nova's API."""

import pytest

from cyborg_like.common import context
from cyborg_like.common import states
from tests import fake_nova
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()


@pytest.fixture
def nova():
    server = fake_nova.FakeNova(transient_failures=1)
    server.thread.start()
    try:
        yield server
    finally:
        server.shutdown()


def _bind(cloud, profile, deployable_name, instance):
    api = cloud.conductor_api
    [arq] = api.create_arqs(ADMIN, profile, None)
    rp = api.list_deployables(ADMIN, {'name': deployable_name}, 1, None,
                              'created_at', 'asc')[0]['rp_uuid']
    api.bind_arqs(ADMIN, {arq['uuid']: {
        'hostname': cloud_module.HOST, 'device_rp_uuid': rp,
        'instance_uuid': instance, 'project_id': None}})
    return arq['uuid']


def test_nova_is_told_of_each_binding_that_ends(nova):
    endpoint = 'http://127.0.0.1:%d' % nova.server_address[1]
    cloud = cloud_module.Cloud(overrides={
        ('nova', 'auth_type'): 'none',
        ('nova', 'endpoint_override'): endpoint,
        ('nova', 'status_code_retry_delay'): 0.05}).start()
    try:
        api = cloud.conductor_api
        api.create_device_profile(ADMIN, 'fpga', [{'resources:FPGA': '1'}],
                                  None)
        api.create_device_profile(ADMIN, 'broken', [
            {'resources:FPGA': '1', 'accel:bitstream_id': 'bs-broken'}],
            None)
        good = _bind(cloud, 'fpga', 'region0',
                     '40000000-0000-0000-0000-000000000001')
        bad = _bind(cloud, 'broken', 'region1',
                    '40000000-0000-0000-0000-000000000002')
        cloud.wait_for(lambda: len([c for c in nova.calls
                                    if c[0].endswith('events')]) >= 3)
        assert api.get_arq(ADMIN, good)['state'] == states.BOUND
        assert api.get_arq(ADMIN, bad)['state'] == states.BIND_FAILED
    finally:
        cloud.stop()
    events = {}
    for path, headers, body in nova.calls:
        assert path == '/os-server-external-events'
        assert headers['OpenStack-API-Version'] == 'compute 2.82'
        for event in body['events']:
            events[event['tag']] = event
    # One call failed with 503 and was retried: three calls, two events.
    assert len(nova.calls) == 3
    assert events[good] == {
        'name': 'accelerator-request-bound', 'tag': good,
        'server_uuid': '40000000-0000-0000-0000-000000000001',
        'status': 'completed'}
    assert events[bad]['status'] == 'failed'


def test_an_event_nova_did_not_take_is_not_sent(nova, caplog):
    """Nova answers 207 with a 404 inside for an instance it does not
    find (its [nova] user cannot see it): not told, and logged as an
    error; with a 422 inside for one it has not put on a host yet: not
    told either, but nova-compute reads the ARQ itself, so no error."""
    nova.transient_failures = 0
    gone = '40000000-0000-0000-0000-000000000003'
    nova.servers[gone] = 'DELETED'
    scheduling = '40000000-0000-0000-0000-000000000005'
    nova.servers[scheduling] = 'SCHEDULING'
    cloud = cloud_module.Cloud(overrides={
        ('nova', 'auth_type'): 'none',
        ('nova', 'endpoint_override'): 'http://127.0.0.1:%d'
                                       % nova.server_address[1]}).start()
    try:
        notifier = cloud.services[0].manager.nova
        assert notifier.binding_ended('a', gone, True) is False
        assert notifier.binding_ended(
            'b', '40000000-0000-0000-0000-000000000004', True) is True
        assert notifier.binding_ended('c', scheduling, True) is False
    finally:
        cloud.stop()
    assert [body['events'][0]['tag'] for _, _, body in nova.calls] == [
        'a', 'b', 'c']
    errors = [r.getMessage() for r in caplog.records
              if r.name == 'cyborg_like.conductor.nova'
              and r.levelname == 'ERROR']
    assert len(errors) == 1 and 'ARQ a of' in errors[0], errors


def test_without_nova_configured_nothing_is_sent(cloud):
    assert cloud.services[0].manager.nova.binding_ended(
        'a', '40000000-0000-0000-0000-000000000001', True) is False


def test_the_shelve_steps_follow_the_servers_status(nova):
    """What a lease's preemption asks Nova (conductor/nova.py) depends on
    the server's status, read each time: shelve, then shelveOffload once
    shelved; nothing when offloaded, deleted or busy (409)."""
    nova.transient_failures = 0
    endpoint = 'http://127.0.0.1:%d' % nova.server_address[1]
    cloud = cloud_module.Cloud(overrides={
        ('nova', 'auth_type'): 'none',
        ('nova', 'endpoint_override'): endpoint,
        ('nova', 'status_code_retries'): 0}).start()
    try:
        client = cloud.services[0].manager.nova
        server = '40000000-0000-0000-0000-000000000003'
        # ACTIVE, SHELVED, then SHELVED_OFFLOADED: nothing more to ask.
        steps = [client.release_step(server) for _ in range(3)]
        # Shelved again, but a task is under way: Nova answers 409.
        nova.servers[server] = 'SHELVED'
        nova.act = lambda *_: (409, {'conflictingRequest': {
            'code': 409, 'message': 'task_state shelving_offloading'}})
        steps.append(client.release_step(server))
        nova.servers[server] = 'DELETED'
        steps.append(client.release_step(server))
    finally:
        cloud.stop()
    assert steps == ['shelve', 'shelveOffload', None, None, None]
    assert nova.actions == [(server, 'shelve'), (server, 'shelveOffload')]
