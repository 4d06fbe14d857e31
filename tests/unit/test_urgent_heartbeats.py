"""Urgent heartbeats: the RPC version cap (a conductor before 1.13 gets a
plain heartbeat) and the agent's coalescing of urgent beats."""

import threading
import time

import oslo_messaging as messaging
import pytest

from cyborg_like.agent import resource_tracker
from cyborg_like.common import context
from cyborg_like.conductor import rpcapi as conductor_rpcapi


class OldConductor:
    """A 1.12 conductor: its heartbeat knows no ``urgent``."""

    target = messaging.Target(version='1.12')

    def __init__(self):
        self.beats = []

    def heartbeat(self, ctxt, host, agent_version, inventory_hash,
                  health=None):
        self.beats.append((host, health))


class NewConductor(OldConductor):
    target = messaging.Target(version='1.13')

    def heartbeat(self, ctxt, host, agent_version, inventory_hash,
                  health=None, urgent=False):
        self.beats.append((host, health, urgent))


@pytest.mark.parametrize('endpoint, cap, expected', [
    (OldConductor, '1.12', ('h1', [{'x': 1}])),
    (NewConductor, None, ('h1', [{'x': 1}], True)),
])
def test_urgent_goes_only_to_conductors_that_know_it(
        serve, conductor_cap, endpoint, cap, expected):
    conductor = endpoint()
    serve(conductor)
    if cap:
        conductor_cap(cap)
    api = conductor_rpcapi.ConductorAPI(timeout=5)
    api.heartbeat(context.get_admin_context(), 'h1', '1.2', 'hash',
                  [{'x': 1}], urgent=True)
    assert conductor.beats == [expected]


def test_urgent_beats_are_coalesced_and_spaced(monkeypatch):
    monkeypatch.setattr(resource_tracker, 'URGENT_MIN_SPACING', 0.2)
    sent, release = [], threading.Event()

    def send():
        sent.append(time.monotonic())
        release.wait(5)
    beats = resource_tracker._UrgentBeats(send)
    beats.start()
    try:
        beats.want()
        deadline = time.monotonic() + 5
        while not sent and time.monotonic() < deadline:
            time.sleep(0.01)
        for _ in range(100):        # a storm while one beat is in flight
            beats.want()
        release.set()
        assert beats.idle(5)        # all it wished for is sent
    finally:
        beats.stop()
    assert len(sent) == 2           # the one in flight, one for the storm
    assert sent[1] - sent[0] >= 0.2


def test_stopping_urgent_beats_never_started_or_twice():
    beats = resource_tracker._UrgentBeats(lambda: None)
    beats.stop()
    beats.start()
    beats.stop()
    beats.stop()


class BeatRecorder:
    """A conductor's heartbeat endpoint: what it got, with the deadline."""

    target = messaging.Target(version='1.19')

    def __init__(self):
        self.beats = []
        self.got = threading.Event()

    def heartbeat(self, ctxt, host, agent_version, inventory_hash,
                  health=None, urgent=False):
        self.beats.append((host, urgent, ctxt.deadline))
        self.got.set()


def test_regular_beats_are_casts_that_expire(serve):
    """A cast beat reaches the conductor with a deadline cast_ttl away
    (nothing is sent back); one that waited past it is dropped unserved
    by a conductor that drops late calls; urgent beats stay calls."""
    conductor = BeatRecorder()
    serve(conductor, drop_late=True, ordered=True)
    api = conductor_rpcapi.ConductorAPI(timeout=5)
    before = time.time()
    assert api.heartbeat(context.get_admin_context(), 'h1', '1.2', 'hash',
                         [], cast_ttl=20) is None
    assert conductor.got.wait(5)
    [(host, urgent, deadline)] = conductor.beats
    assert (host, urgent) == ('h1', False)
    assert before + 20 <= deadline <= time.time() + 20
    # Late: the queue held it longer than its ttl.
    late = context.get_admin_context()
    late.deadline = time.time() - 1
    from cyborg_like.common import rpc
    cctxt = api._client.prepare(version='1.13')
    cctxt.cast(late, 'heartbeat', host='h2', agent_version='1.2',
               inventory_hash='hash', health=[])
    assert rpc.TRANSPORT is not None
    # The urgent beat, a call, comes after it on the same queue: answered,
    # so the late one was handled (dropped) before it.
    api.heartbeat(context.get_admin_context(), 'h3', '1.2', 'hash', [],
                  urgent=True, cast_ttl=20)
    assert [b[:2] for b in conductor.beats] == [('h1', False), ('h3', True)]


@pytest.mark.parametrize('delivery, sent', [
    ('stream', {'stream_ttl': 20}), ('cast', {'cast_ttl': 20}),
    ('call', {})])
def test_the_agent_periodic_sends_as_told(delivery, sent):
    from cyborg_like.conf import CONF
    got = []

    class Api:
        def heartbeat(self, ctxt, host, *args, **kwargs):
            got.append(kwargs)

    tracker = resource_tracker.ResourceTracker('h1', CONF, Api(), drivers={})
    CONF.set_override('heartbeat_delivery', delivery, group='agent')
    CONF.set_override('heartbeat_interval', 10, group='agent')
    try:
        tracker.regular_heartbeat()
        tracker.heartbeat(urgent=True)
    finally:
        CONF.clear_override('heartbeat_delivery', group='agent')
        CONF.clear_override('heartbeat_interval', group='agent')
    assert got == [sent, {'urgent': True}]
