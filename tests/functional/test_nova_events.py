"""Nova hears when bindings end: a recording endpoint stands in for Nova's
os-server-external-events and checks each call against its request schema.
It also answers the server actions a lease's preemption asks (shelve,
shelveOffload) and GET /servers/{id} as Nova does: each action from the
statuses Nova allows it in, 409 otherwise.
"""

import http.server
import json
import threading

import jsonschema
import pytest

from cyborg_like.common import context
from cyborg_like.common import states
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()

# Nova's request body for POST /os-server-external-events (microversion
# 2.82 added accelerator-request-bound).
NOVA_EVENTS_SCHEMA = {
    'type': 'object',
    'properties': {'events': {
        'type': 'array', 'minItems': 1,
        'items': {
            'type': 'object',
            'properties': {
                'server_uuid': {'type': 'string', 'pattern':
                                '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$'},
                'name': {'enum': ['network-changed', 'network-vif-plugged',
                                  'network-vif-unplugged',
                                  'network-vif-deleted',
                                  'volume-extended', 'power-update',
                                  'accelerator-request-bound',
                                  'volume-reimaged']},
                'status': {'enum': ['failed', 'completed', 'in-progress']},
                'tag': {'type': 'string', 'maxLength': 255},
            },
            'required': ['server_uuid', 'name'],
            'additionalProperties': False}}},
    'required': ['events'],
    'additionalProperties': False,
}


# Nova's server actions: (the statuses it accepts them in, the status
# after). Shelving ends SHELVED, or SHELVED_OFFLOADED at once where Nova
# offloads shelved instances itself (shelved_offload_time = 0).
SERVER_ACTIONS = {
    'shelve': ({'ACTIVE', 'SHUTOFF', 'PAUSED', 'SUSPENDED'}, 'SHELVED'),
    'shelveOffload': ({'SHELVED'}, 'SHELVED_OFFLOADED'),
}


class FakeNova(http.server.ThreadingHTTPServer):
    """``calls``: the external events' requests; ``actions``: (server,
    action) of each server action accepted; ``servers``: each server's
    status (ACTIVE until an action moves it)."""

    def __init__(self, transient_failures=0, offload_at_once=False):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.calls = []
        self.actions = []
        self.servers = {}
        self.offload_at_once = offload_at_once
        self.transient_failures = transient_failures
        self.thread = threading.Thread(target=self.serve_forever,
                                       daemon=True)

    def act(self, server, action):
        """(status, answer) of ``action`` on ``server``, as Nova's."""
        allowed, after = SERVER_ACTIONS[action]
        status = self.servers.get(server, 'ACTIVE')
        if status not in allowed:
            return 409, {'conflictingRequest': {
                'code': 409, 'message': "Cannot '%s' instance %s while it "
                                        'is in status %s' % (action, server,
                                                             status)}}
        if after == 'SHELVED' and self.offload_at_once:
            after = 'SHELVED_OFFLOADED'
        self.servers[server] = after
        self.actions.append((server, action))
        return 202, None


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        parts = self.path.strip('/').split('/')
        if parts[0] == 'servers' and parts[2:] == ['action']:
            [action] = body
            assert body[action] is None, body
            return self._answer(*self.server.act(parts[1], action))
        self.server.calls.append((self.path, dict(self.headers), body))
        if self.server.transient_failures:
            self.server.transient_failures -= 1
            return self._answer(503, {'error': 'try later'})
        jsonschema.validate(body, NOVA_EVENTS_SCHEMA)
        self._answer(200, {'events': [dict(e, code=200)
                                      for e in body['events']]})

    def do_GET(self):
        parts = self.path.strip('/').split('/')
        assert parts[0] == 'servers' and len(parts) == 2, self.path
        if self.server.servers.get(parts[1]) == 'DELETED':
            return self._answer(404, {'itemNotFound': {
                'code': 404, 'message': 'Instance %s could not be found.'
                % parts[1]}})
        self._answer(200, {'server': {
            'id': parts[1],
            'status': self.server.servers.get(parts[1], 'ACTIVE')}})

    def _answer(self, status, document):
        data = b'' if document is None else json.dumps(document).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def nova():
    server = FakeNova(transient_failures=1)
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
