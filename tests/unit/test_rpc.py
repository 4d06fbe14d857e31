"""RPC: versions, caps and the request context, over oslo.messaging's real
in-memory transport."""

import time

import oslo_messaging as messaging
import pytest

from cyborg_like.agent import rpcapi as agent_rpcapi
from cyborg_like.common import context
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF


class Recorder:
    """A conductor endpoint that records what reaches it."""

    target = messaging.Target(version='1.0')

    def __init__(self):
        self.calls = []

    def get_device(self, ctxt, uuid):
        self.calls.append((ctxt, uuid))
        if uuid == 'missing':
            raise exception.DeviceNotFound(uuid=uuid)
        return {'uuid': uuid}


@pytest.fixture
def transport():
    CONF.set_override('transport_url', 'fake:/')
    rpc.init(CONF)
    try:
        yield
    finally:
        rpc.cleanup()
        CONF.clear_override('transport_url')


@pytest.fixture
def recorder(transport):
    endpoint = Recorder()
    server = rpc.get_server(messaging.Target(
        topic=conductor_rpcapi.TOPIC, server='c1'), [endpoint])
    server.start()
    try:
        yield endpoint
    finally:
        server.stop()
        server.wait()


def test_context_crosses_rpc(recorder):
    ctxt = context.RequestContext(user_id='u1', project_id='p1',
                                  roles=['member', 'reader'],
                                  request_id='req-abc')
    api = conductor_rpcapi.ConductorAPI(timeout=5)
    assert api.get_device(ctxt, 'd1') == {'uuid': 'd1'}
    received, uuid = recorder.calls[0]
    assert isinstance(received, context.RequestContext)
    assert (received.user_id, received.project_id, received.request_id) == \
        ('u1', 'p1', 'req-abc')
    assert received.roles == ['member', 'reader']


def test_our_exceptions_cross_rpc_as_themselves(recorder):
    api = conductor_rpcapi.ConductorAPI(timeout=5)
    with pytest.raises(exception.DeviceNotFound) as raised:
        api.get_device(context.get_admin_context(), 'missing')
    assert 'Device missing could not be found' in str(raised.value)


def test_a_newer_version_than_the_server_has_is_refused(recorder):
    client = rpc.get_client(messaging.Target(
        topic=conductor_rpcapi.TOPIC, version='1.0'))
    cctxt = client.prepare(version='1.5', timeout=5)
    with pytest.raises(messaging.UnsupportedVersion):
        cctxt.call(context.get_admin_context(), 'get_device', uuid='d1')


def test_version_cap_comes_from_upgrade_levels(transport):
    CONF.set_override('conductor', '1.0', group='upgrade_levels')
    try:
        api = conductor_rpcapi.ConductorAPI()
        assert api._client.can_send_version('1.0')
        assert not api._client.can_send_version('1.1')
    finally:
        CONF.clear_override('conductor', group='upgrade_levels')


def test_no_cap_means_the_newest_we_know(transport):
    api = conductor_rpcapi.ConductorAPI()
    assert api._client.can_send_version(conductor_rpcapi.RPC_API_VERSION)


def test_agent_calls_are_addressed_to_one_host(transport):
    received = []

    class Agent:
        target = messaging.Target(version='1.0')

        def __init__(self, host):
            self.host = host

        def resync_inventory(self, ctxt):
            received.append(self.host)

    servers = [rpc.get_server(messaging.Target(
        topic=agent_rpcapi.TOPIC, server=host), [Agent(host)])
        for host in ('compute-1', 'compute-2')]
    for server in servers:
        server.start()
    try:
        agent_rpcapi.AgentAPI().resync_inventory(
            context.get_admin_context(), 'compute-2')
        deadline = time.monotonic() + 5
        while not received and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)     # time enough for a wrong second delivery
    finally:
        for server in servers:
            server.stop()
            server.wait()
    assert received == ['compute-2']


def test_no_conductor_means_a_timeout_not_a_hang(transport):
    api = conductor_rpcapi.ConductorAPI(timeout=0.5)
    with pytest.raises(messaging.MessagingTimeout):
        api.get_device(context.get_admin_context(), 'd1')
