"""A write's call that gets no answer fails only once no conductor can
commit it any more (issue 28): the API's 503 then means "not written".

The waits are recorded, not slept: rpc's clock is the test's."""

import logging
import time

import oslo_messaging as messaging
import pytest

from cyborg_like.common import context
from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF

TIMEOUT = 30


class Clock:
    """_settle's monotonic clock and sleep: a sleep moves the clock, which
    starts at the real one's time (the call's deadline is the real
    clock's)."""

    def __init__(self):
        self.now = time.monotonic()
        self.slept = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch, transport):
    clock = Clock()
    monkeypatch.setattr(rpc, '_settle_clock', clock)
    return clock


class Conductor:
    """Answers reads; its writes fail as the test says."""

    target = messaging.Target(version='1.21')

    def __init__(self):
        self.failure = None
        self.calls = []

    def get_device(self, ctxt, uuid):
        self.calls.append('get_device')
        raise self.failure

    def create_arqs(self, ctxt, **kwargs):
        self.calls.append('create_arqs')
        raise self.failure


def _publish_fails(monkeypatch):
    """Every publish fails at once, as with a broker that cannot be
    reached; the message may have gone out all the same (a confirm lost
    in a cut)."""
    def fail(cctxt, context, method, **kwargs):
        raise messaging.MessageDeliveryFailure('broker unreachable')
    monkeypatch.setattr(rpc, 'call_reaching_broker', fail)


def test_an_unanswered_write_fails_past_its_deadline_and_margin(
        clock, monkeypatch):
    _publish_fails(monkeypatch)
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT, settle_writes=True)
    with pytest.raises(rpc.WriteNotDone) as raised:
        api.create_arqs(context.get_admin_context(), 'profile', None)
    assert raised.value.unreachable
    assert 'create_arqs' in str(raised.value)
    # Failed at once, told only at the deadline and the margin (and no
    # change log asked: [api] lost_answer_timeout is 0 by default).
    [waited] = clock.slept
    assert waited == pytest.approx(TIMEOUT + CONF.rpc_commit_margin,
                                   abs=1.0)


def test_a_cluster_asks_the_change_log_before_its_503(clock, monkeypatch):
    """With [api] lost_answer_timeout set, the lost answer is asked for
    (here the broker stays unreachable) until that time has passed."""
    CONF.set_override('lost_answer_timeout', 10, group='api')
    try:
        _publish_fails(monkeypatch)
        api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT,
                                            settle_writes=True)
        with pytest.raises(rpc.WriteNotDone):
            api.create_arqs(context.get_admin_context(), 'profile', None)
    finally:
        CONF.clear_override('lost_answer_timeout', group='api')
    waited, *asking = clock.slept
    assert waited == pytest.approx(TIMEOUT + CONF.rpc_commit_margin,
                                   abs=1.0)
    assert sum(asking) == pytest.approx(10, abs=0.5)


def test_an_unanswered_read_fails_at_once(clock, monkeypatch):
    _publish_fails(monkeypatch)
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT, settle_writes=True)
    with pytest.raises(messaging.MessageDeliveryFailure):
        api.get_device(context.get_admin_context(), 'd1')
    assert clock.slept == []


def test_a_client_that_does_not_settle_fails_at_once(clock, monkeypatch):
    """The agents' clients: their reports are told again."""
    _publish_fails(monkeypatch)
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    with pytest.raises(messaging.MessageDeliveryFailure):
        api.create_arqs(context.get_admin_context(), 'profile', None)
    assert clock.slept == []


@pytest.mark.parametrize('failure', [
    exception.DeviceProfileNotFound(name='profile'),
    exception.RequestDeadlinePassed(request_id='req-1', late=1.0),
    RuntimeError('the conductor failed')])
def test_a_conductors_answer_is_raised_at_once(clock, serve, failure):
    conductor = Conductor()
    conductor.failure = failure
    serve(conductor)
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT, settle_writes=True)
    with pytest.raises((type(failure), messaging.RemoteError)):
        api.create_arqs(context.get_admin_context(), 'profile', None)
    assert conductor.calls == ['create_arqs']
    assert clock.slept == []


def test_reads_are_the_get_and_list_calls():
    """READS names the calls that write nothing: every get_/list_ call of
    the client, and nothing else but the read model's snapshot."""
    import inspect
    import re
    source = inspect.getsource(conductor_rpcapi.ConductorAPI)
    called = set(re.findall(r"_call\(\s*context, '(\w+)'", source))
    assert conductor_rpcapi.READS <= called
    assert {m for m in called if m.startswith(('get_', 'list_'))} | {
        'read_model_snapshot'} == set(conductor_rpcapi.READS)


def test_a_commit_later_than_the_margin_is_logged_as_an_error(caplog):
    late = context.RequestContext(request_id='req-late-commit')
    late.deadline = time.time() - CONF.rpc_commit_margin - 5
    in_time = context.RequestContext(request_id='req-in-time')
    in_time.deadline = time.time() + TIMEOUT
    with caplog.at_level(logging.ERROR, logger=deadlines.__name__):
        for ctxt in (late, in_time):
            with deadlines.serving(ctxt):
                deadlines.committed()
    assert [r.getMessage() for r in caplog.records
            if 'req-late-commit' in r.getMessage()]
    assert not [r for r in caplog.records
                if 'req-in-time' in r.getMessage()]
