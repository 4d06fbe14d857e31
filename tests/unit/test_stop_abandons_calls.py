"""Stops that do not wait out a timeout or a poll. A stopping agent
abandons its calls to the conductor (rpc.Calls): a handler waiting for a
conductor that will not answer (the all-in-one stops its conductor first)
must not hold the stop for [agent] report_timeout. Our RPC servers' pools
wake their idle workers when they stop. Over oslo.messaging's real
in-memory transport; the conductor is a stub endpoint that holds its
answer until the test lets it go."""

import concurrent.futures
import threading
import time

import oslo_messaging as messaging
import pytest

from cyborg_like.agent import rpcapi as agent_rpcapi
from cyborg_like.agent import service as agent_service
from cyborg_like.common import context
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF

ADMIN = context.get_admin_context()
HOST = 'compute-abandon'
# Far above what any of these tests may take: a wait it bounded would fail.
HELD = 30


class Conductor:
    """Takes reports; holds ``get_device`` and ``handle_released`` until
    ``released`` is set (HELD seconds at most)."""

    target = messaging.Target(version=conductor_rpcapi.RPC_API_VERSION)

    def __init__(self):
        self.beaten = threading.Event()
        self.entered = threading.Event()
        self.released = threading.Event()
        self.devices = []

    def report_inventory(self, ctxt, host, devices, inventory_hash):
        return {}

    def heartbeat(self, ctxt, **kwargs):
        self.beaten.set()

    def get_device(self, ctxt, uuid):
        self.devices.append(uuid)
        self.entered.set()
        self.released.wait(HELD)
        return {'uuid': uuid}

    def handle_released(self, ctxt, handle_uuid, erased):
        self.entered.set()
        self.released.wait(HELD)
        return True


@pytest.fixture
def conductor(serve):
    endpoint = Conductor()
    serve(endpoint, server='c1')
    try:
        yield endpoint
    finally:
        endpoint.released.set()     # before the server's stop waits on it


def _in_thread(func):
    outcome = {}

    def run():
        try:
            outcome['result'] = func()
        except Exception as error:
            outcome['error'] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_abandon_ends_a_waiting_call_at_once(conductor):
    api = conductor_rpcapi.ConductorAPI(timeout=HELD)
    thread, outcome = _in_thread(lambda: api.get_device(ADMIN, 'd1'))
    assert conductor.entered.wait(10)
    started = time.monotonic()
    api.abandon_calls()
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - started < 5
    # A MessagingTimeout: callers take it as "no conductor answered".
    assert isinstance(outcome.get('error'), rpc.CallAbandoned), outcome


def test_calls_after_abandon_are_not_sent_until_resumed(conductor):
    conductor.released.set()
    api = conductor_rpcapi.ConductorAPI(timeout=HELD)
    api.abandon_calls()
    with pytest.raises(rpc.CallAbandoned):
        api.get_device(ADMIN, 'd1')
    # Another client is not concerned, and its answer comes after any
    # message sent before it would have been taken.
    assert conductor_rpcapi.ConductorAPI(timeout=10).get_device(
        ADMIN, 'd2') == {'uuid': 'd2'}
    assert conductor.devices == ['d2']
    api.resume_calls()
    assert api.get_device(ADMIN, 'd3') == {'uuid': 'd3'}


def test_an_agent_stops_while_its_handler_waits_for_a_conductor(
        conductor):
    """The conductor casts a release; the agent's handler confirms it
    (handle_released) and the conductor never answers: the agent's stop
    ends that wait, and the confirmation is left to be told again."""
    # One heartbeat (a call), at the start: none confirms the release
    # meanwhile, which quiesce would wait for.
    overrides = {'report_timeout': HELD, 'enabled_drivers': [],
                 'heartbeat_delivery': 'call', 'heartbeat_interval': 3600,
                 'discovery_interval': 3600}
    for name, value in overrides.items():
        CONF.set_override(name, value, group='agent')
    try:
        agent = agent_service.AgentService(CONF, host=HOST, drivers={})
        agent.start()
        try:
            assert conductor.beaten.wait(10)
            agent_rpcapi.AgentAPI().release_attach_handle(ADMIN, HOST, {
                'hostname': HOST, 'driver_name': 'absent',
                'controlpath_id': {'type': 'PCI', 'info': '0000:00:00.0'},
                'attach_handle': {'uuid': 'handle-1'}, 'confirm': True})
            assert conductor.entered.wait(10)
        finally:
            started = time.monotonic()
            agent.stop()
            stopped_in = time.monotonic() - started
    finally:
        for name in overrides:
            CONF.clear_override(name, group='agent')
    assert stopped_in < 5
    assert agent.tracker._unconfirmed == {'handle-1': False}


def test_servers_use_a_pool_that_wakes_its_idle_workers_on_stop(serve):
    """futurist's pool (oslo.messaging's 'threading' executor) has idle
    workers look for a stop once a second, which every server's wait()
    waited for; ours is the standard library's."""
    server = serve(Conductor())
    assert isinstance(server._work_executor,
                      concurrent.futures.ThreadPoolExecutor)
    assert server._work_executor.__class__.__module__ == rpc.__name__
