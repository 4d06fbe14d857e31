"""The heartbeat stream: agents' regular beats published on a queue of
their own and taken by conductors in batches (in-process messaging; the
broker's side is in tests/integration/test_faults_heartbeat_stream.py)."""

import threading
import time

import oslo_messaging as messaging
import pytest

from cyborg_like.common import context
from cyborg_like.common import heartbeat_stream
from cyborg_like.common import rpc
from cyborg_like.conductor import heartbeat_stream as conductor_stream
from cyborg_like.conductor import metrics
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF

ADMIN = context.get_admin_context()
HEALTH = [{'controlpath_id': {'cpid_type': 'PCI', 'cpid_info': 'x'},
           'healthy': True, 'reasons': [], 'utilization': {'gpu': 5}}]


class Collector:
    """What HeartbeatCollector.add_many got."""

    def __init__(self, expected):
        self.beats = []
        self._expected = expected
        self.done = threading.Event()

    def add_many(self, ctxt, beats):
        self.beats += [(b['host'], b['agent_version'], b['inventory_hash'],
                        b['health']) for b in beats]
        if len(self.beats) >= self._expected:
            self.done.set()


@pytest.fixture
def stream(transport):
    started = []

    def start(collector):
        listener = conductor_stream.HeartbeatStream(CONF, collector)
        listener.start()
        started.append(listener)
        return listener

    try:
        yield start
    finally:
        for listener in started:
            listener.stop()


def _handled(listener):
    """Stop ``listener``; when it returns, every beat the listener took
    off the queue has been handled (what has not reached the collector by
    then never will: no waiting on time)."""
    listener.stop()


def test_a_streamed_beat_reaches_the_collector_without_an_answer(stream):
    collector = Collector(expected=1)
    stream(collector)
    api = conductor_rpcapi.ConductorAPI(timeout=5)
    assert api.heartbeat(ADMIN, 'h1', '1.2', 'hash', HEALTH,
                         stream_ttl=20) is None
    assert collector.done.wait(5)
    assert collector.beats == [('h1', '1.2', 'hash', HEALTH)]


def test_beats_past_their_deadline_are_dropped_and_counted(stream):
    """A batch holding a beat that waited past its deadline: that one is
    counted and dropped, the fresh one after it is taken."""
    before = metrics.EXPIRED._value.get()
    now = time.time()
    for host, sent_at in (('stale', now - 30), ('fresh', now)):
        rpc.publish(heartbeat_stream.TOPIC, heartbeat_stream.PRIORITY,
                    heartbeat_stream.EVENT_TYPE, 'agent.%s' % host,
                    heartbeat_stream.beat(host, '1.2', 'hash', [], ttl=20,
                                          now=sent_at), retry=0)
    collector = Collector(expected=1)
    listener = stream(collector)
    assert collector.done.wait(5)
    _handled(listener)          # the stale one came before the fresh one
    assert [b[0] for b in collector.beats] == ['fresh']
    assert metrics.EXPIRED._value.get() == before + 1


def test_other_events_on_the_stream_are_left_alone(stream):
    rpc.publish(heartbeat_stream.TOPIC, heartbeat_stream.PRIORITY,
                'agent.something_else', 'agent.h0', {'host': 'h0'}, retry=0)
    rpc.publish(heartbeat_stream.TOPIC, heartbeat_stream.PRIORITY,
                heartbeat_stream.EVENT_TYPE, 'agent.h1',
                heartbeat_stream.beat('h1', '1.2', 'hash', [], ttl=20),
                retry=0)
    collector = Collector(expected=1)
    listener = stream(collector)
    assert collector.done.wait(5)
    _handled(listener)          # the other event came before the beat
    assert [b[0] for b in collector.beats] == ['h1']


class OldConductor:
    """A 1.20 conductor: it reads no stream; beats must be calls."""

    target = messaging.Target(version='1.20')

    def __init__(self):
        self.beats = []

    def heartbeat(self, ctxt, host, agent_version, inventory_hash,
                  health=None, urgent=False):
        self.beats.append((host, getattr(ctxt, 'deadline', None)))


def test_an_agent_capped_below_1_21_calls(serve, conductor_cap, stream):
    conductor = OldConductor()
    serve(conductor)
    conductor_cap('1.20')
    collector = Collector(expected=1)
    listener = stream(collector)
    api = conductor_rpcapi.ConductorAPI(timeout=5)
    api.heartbeat(ADMIN, 'h1', '1.2', 'hash', HEALTH, stream_ttl=20)
    # Answered (a call), so it is there at once.
    assert [b[0] for b in conductor.beats] == ['h1']
    # A marker on the stream after it: the beat, had it been published
    # too, would have come first.
    rpc.publish(heartbeat_stream.TOPIC, heartbeat_stream.PRIORITY,
                heartbeat_stream.EVENT_TYPE, 'agent.marker',
                heartbeat_stream.beat('marker', '1.2', 'hash', [], ttl=20),
                retry=0)
    assert collector.done.wait(5)
    _handled(listener)
    assert [b[0] for b in collector.beats] == ['marker']


def test_a_beat_expires_ttl_after_it_was_sent():
    payload = heartbeat_stream.beat('h1', '1.2', 'hash', None, ttl=20,
                                    now=1000.0)
    assert payload['health'] == []
    assert not heartbeat_stream.expired(payload, now=1019.9)
    assert heartbeat_stream.expired(payload, now=1020.0)
    assert heartbeat_stream.expired({}, now=0)
