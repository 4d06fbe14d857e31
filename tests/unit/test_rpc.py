"""RPC: versions, caps and the request context, over oslo.messaging's real
in-memory transport."""

import threading
import time

import oslo_messaging as messaging
import pytest

from cyborg_like.agent import rpcapi as agent_rpcapi
from cyborg_like.common import context
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.conductor import metrics as conductor_metrics
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF
from harness.infra import wait_for

# Calls answered at once: a ceiling, for a busy machine (CI's load).
TIMEOUT = 30


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
def recorder(serve):
    endpoint = Recorder()
    serve(endpoint, ordered=True)
    return endpoint


def _call(topic, server, method, **kwargs):
    """``method`` called on ``server`` of ``topic``: its answer."""
    client = rpc.get_client(messaging.Target(topic=topic, version='1.0'))
    return client.prepare(server=server, timeout=TIMEOUT).call(
        context.get_admin_context(), method, **kwargs)


def test_context_crosses_rpc(recorder):
    ctxt = context.RequestContext(user_id='u1', project_id='p1',
                                  roles=['member', 'reader'],
                                  request_id='req-abc')
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    assert api.get_device(ctxt, 'd1') == {'uuid': 'd1'}
    received, uuid = recorder.calls[0]
    assert isinstance(received, context.RequestContext)
    assert (received.user_id, received.project_id, received.request_id) == \
        ('u1', 'p1', 'req-abc')
    assert received.roles == ['member', 'reader']


def test_our_exceptions_cross_rpc_as_themselves(recorder):
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    with pytest.raises(exception.DeviceNotFound) as raised:
        api.get_device(context.get_admin_context(), 'missing')
    assert 'Device missing could not be found' in str(raised.value)


def test_a_newer_version_than_the_server_has_is_refused(recorder):
    client = rpc.get_client(messaging.Target(
        topic=conductor_rpcapi.TOPIC, version='1.0'))
    cctxt = client.prepare(version='1.5', timeout=TIMEOUT)
    with pytest.raises(messaging.UnsupportedVersion):
        cctxt.call(context.get_admin_context(), 'get_device', uuid='d1')


def test_version_cap_comes_from_upgrade_levels(transport, conductor_cap):
    conductor_cap('1.0')
    api = conductor_rpcapi.ConductorAPI()
    assert api._client.can_send_version('1.0')
    assert not api._client.can_send_version('1.1')


def test_no_cap_means_the_newest_we_know(transport):
    api = conductor_rpcapi.ConductorAPI()
    assert api._client.can_send_version(conductor_rpcapi.RPC_API_VERSION)


def test_agent_calls_are_addressed_to_one_host(serve):
    received = []

    class Agent:
        target = messaging.Target(version='1.0')

        def __init__(self, host):
            self.host = host

        def resync_inventory(self, ctxt):
            received.append(self.host)

        def ping(self, ctxt):
            return self.host

    for host in ('compute-1', 'compute-2'):
        serve(Agent(host), topic=agent_rpcapi.TOPIC, server=host,
              ordered=True)
    agent_rpcapi.AgentAPI().resync_inventory(
        context.get_admin_context(), 'compute-2')
    # A marker behind it on each host's queue: a wrong copy (a fanout, one
    # per host) would have been handled before the marker is answered.
    for host in ('compute-1', 'compute-2'):
        assert _call(agent_rpcapi.TOPIC, host, 'ping') == host
    assert received == ['compute-2']


def test_no_conductor_means_a_timeout_not_a_hang(transport):
    api = conductor_rpcapi.ConductorAPI(timeout=0.5)
    with pytest.raises(messaging.MessagingTimeout):
        api.get_device(context.get_admin_context(), 'd1')


class ARQRecorder:
    """A conductor of RPC API 1.4: create_arqs has no max_accelerators."""

    target = messaging.Target(version='1.4')

    def __init__(self):
        self.calls = []

    def create_arqs(self, ctxt, profile_name, group_id):
        self.calls.append((profile_name, group_id))
        return []


@pytest.mark.parametrize('cap, sent', [('1.4', False), (None, True)])
def test_max_accelerators_is_sent_to_conductors_that_know_it(
        serve, conductor_cap, cap, sent):
    endpoint = ARQRecorder()
    if sent:
        def create_arqs(ctxt, profile_name, group_id, max_accelerators):
            endpoint.calls.append((profile_name, group_id, max_accelerators))
            return []
        endpoint.create_arqs = create_arqs
        endpoint.target = messaging.Target(version='1.5')
    serve(endpoint)
    if cap:
        conductor_cap(cap)
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    api.create_arqs(context.get_admin_context(), 'p', None, 8)
    assert endpoint.calls == ([('p', None, 8)] if sent else [('p', None)])


class Holder(Recorder):
    """Answers get_device once the test sets ``released`` (30 s at most)."""

    def __init__(self):
        super().__init__()
        self.released = threading.Event()

    def get_device(self, ctxt, uuid):
        self.released.wait(30)
        return super().get_device(ctxt, uuid)


def test_a_call_carries_its_deadline_and_leaves_the_callers_context(
        recorder):
    ctxt = context.RequestContext(request_id='req-dl')
    before = time.time()
    conductor_rpcapi.ConductorAPI(timeout=TIMEOUT).get_device(ctxt, 'd1')
    received, _ = recorder.calls[0]
    assert before + TIMEOUT <= received.deadline <= time.time() + TIMEOUT
    assert ctxt.deadline is None
    # An earlier deadline of the caller's wins over the client's timeout.
    ctxt.deadline = time.time() + TIMEOUT / 3
    conductor_rpcapi.ConductorAPI(timeout=TIMEOUT).get_device(ctxt, 'd2')
    assert recorder.calls[1][0].deadline == ctxt.deadline


def test_a_call_whose_deadline_passed_is_dropped_by_a_conductor(serve):
    endpoint = Recorder()
    serve(endpoint, drop_late=True)
    # Sent as a message published late would arrive: deadline gone.
    late = context.RequestContext(request_id='req-late')
    late.deadline = time.time() - 3
    cctxt = rpc.get_client(messaging.Target(
        topic=conductor_rpcapi.TOPIC, version='1.0')).prepare(timeout=TIMEOUT)
    with pytest.raises(exception.RequestDeadlinePassed) as raised:
        cctxt.call(late, 'get_device', uuid='d1')
    assert 'req-late' in str(raised.value)
    # The same call in time, and one without a deadline, are served.
    conductor_rpcapi.ConductorAPI(timeout=TIMEOUT).get_device(
        context.get_admin_context(), 'd2')
    cctxt.call(context.get_admin_context(), 'get_device', uuid='d3')
    assert [uuid for _, uuid in endpoint.calls] == ['d2', 'd3']


def _in_progress(method):
    return conductor_metrics.PROCESS.get_sample_value(
        'cyborg_like_rpc_calls_in_progress', {'method': method}) or 0


def _dropped(method):
    return conductor_metrics.PROCESS.get_sample_value(
        'cyborg_like_rpc_calls_dropped_late_total', {'method': method}) or 0


def test_a_conductor_counts_the_calls_it_serves_and_drops(serve):
    holder = Holder()
    serve(holder, drop_late=True, watch=conductor_metrics.RpcCalls)
    dropped = _dropped('get_device')
    caller = threading.Thread(
        target=conductor_rpcapi.ConductorAPI(timeout=TIMEOUT).get_device,
        args=(context.get_admin_context(), 'held'))
    caller.start()
    try:
        wait_for(lambda: _in_progress('get_device') == 1, timeout=TIMEOUT,
                 message='the held call was not counted in progress')
    finally:
        holder.released.set()
        caller.join(TIMEOUT)
    assert _in_progress('get_device') == 0
    late = context.RequestContext(request_id='req-late')
    late.deadline = time.time() - 3
    with pytest.raises(exception.RequestDeadlinePassed):
        rpc.get_client(messaging.Target(
            topic=conductor_rpcapi.TOPIC, version='1.0')).prepare(
                timeout=TIMEOUT).call(late, 'get_device', uuid='d1')
    assert _dropped('get_device') == dropped + 1
    assert _in_progress('get_device') == 0


class Tally:
    """A gauge's inc and dec, with the most it counted at once."""

    def __init__(self):
        self.value = self.most = 0

    def inc(self):
        self.value += 1
        self.most = max(self.most, self.value)

    def dec(self):
        self.value -= 1


def test_a_call_is_in_flight_until_its_sending_ends(recorder):
    in_flight = Tally()
    conductor_rpcapi.ConductorAPI(timeout=TIMEOUT, in_flight=in_flight)\
        .get_device(context.get_admin_context(), 'd1')
    # The sending thread ends just after it handed the answer over.
    wait_for(lambda: in_flight.value == 0, timeout=TIMEOUT,
             message='the call stayed in flight')
    assert in_flight.most == 1
    # A call with no time left is not sent, nor counted.
    ctxt = context.RequestContext()
    ctxt.deadline = time.time() - 1
    with pytest.raises(messaging.MessagingTimeout):
        conductor_rpcapi.ConductorAPI(timeout=TIMEOUT, in_flight=in_flight)\
            .get_device(ctxt, 'd2')
    assert (in_flight.value, in_flight.most) == (0, 1)


def test_the_wait_is_bounded_by_the_timeout(serve):
    holder = Holder()
    serve(holder)
    started = time.monotonic()
    try:
        with pytest.raises(messaging.MessagingTimeout):
            conductor_rpcapi.ConductorAPI(timeout=0.5).get_device(
                context.get_admin_context(), 'd1')
    finally:
        holder.released.set()
    # The answer was held until the caller gave up: a wait the timeout did
    # not bound would have lasted 30 s and got it. A ceiling well above
    # the 0.5 s asked for, so a busy machine does not fail it.
    assert time.monotonic() - started < 10 * 0.5


def test_no_time_left_means_nothing_is_sent(recorder):
    ctxt = context.RequestContext()
    ctxt.deadline = time.time() - 1
    with pytest.raises(messaging.MessagingTimeout):
        conductor_rpcapi.ConductorAPI(timeout=TIMEOUT).get_device(ctxt, 'd1')
    # A marker call after it, on the same queue: one sent before it would
    # have been handled before the marker is answered.
    conductor_rpcapi.ConductorAPI(timeout=TIMEOUT).get_device(
        context.get_admin_context(), 'marker')
    assert [uuid for _, uuid in recorder.calls] == ['marker']


def test_the_deadline_survives_serialisation():
    ctxt = context.RequestContext(request_id='req-x')
    ctxt.deadline = 1234.5
    again = context.RequestContext.from_dict(ctxt.to_dict())
    assert (again.deadline, again.request_id) == (1234.5, 'req-x')
    assert context.RequestContext.from_dict(
        context.RequestContext().to_dict()).deadline is None


def test_a_negative_publish_retries_means_for_ever():
    # oslo.messaging reads -1 as "no retry" when it opens a connection.
    for value, expected in ((-1, None), (0, 0), (2, 2)):
        CONF.set_override('rpc_publish_retries', value)
        try:
            assert rpc.publish_retries() == expected
        finally:
            CONF.clear_override('rpc_publish_retries')


class RolloutRecorder:
    """A conductor of RPC API 1.19: rollouts and host labels."""

    target = messaging.Target(version='1.19')

    def __init__(self):
        self.calls = []

    def create_rollout(self, ctxt, values, dry_run):
        self.calls.append(values)
        return {}

    def set_host_labels(self, ctxt, hostname, labels):
        self.calls.append(labels)
        return {}


@pytest.mark.parametrize('values', [
    {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0',
     'parameters': {'package': 'nvidia-driver'}},
    {'kind': 'driver', 'driver': 'nvidia', 'version': '2.0', 'timeout': 60},
    {'kind': 'bitstream', 'image': 'bs', 'selector': {
        'labels': {'ring': 'canary'}}}], ids=['parameters', 'timeout',
                                              'labels'])
def test_rollout_options_a_1_18_conductor_would_ignore_are_refused(
        serve, conductor_cap, values):
    """A conductor of 1.18 would drop these and select, or install, more
    than asked: the client refuses them until the conductors know 1.19,
    and sends plain rollouts as before."""
    endpoint = RolloutRecorder()
    serve(endpoint)
    conductor_cap('1.18')
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    admin = context.get_admin_context()
    with pytest.raises(exception.Conflict, match='upgraded'):
        api.create_rollout(admin, values)
    with pytest.raises(exception.Conflict, match='upgraded'):
        api.set_host_labels(admin, 'h1', {'ring': 'canary'})
    api.create_rollout(admin, {'kind': 'bitstream', 'image': 'bs'})
    assert endpoint.calls == [{'kind': 'bitstream', 'image': 'bs'}]


class HostsOf118:
    """A 1.18 conductor: list_hosts answers every host."""

    target = messaging.Target(version='1.18')

    def list_hosts(self, ctxt):
        return [{'hostname': 'h%d' % n} for n in range(5)]


def test_hosts_are_paged_by_the_client_for_a_1_18_conductor(
        serve, conductor_cap):
    serve(HostsOf118())
    conductor_cap('1.18')
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    admin = context.get_admin_context()
    assert [h['hostname'] for h in api.list_hosts(admin, limit=2,
                                                  marker='h1')] == \
        ['h2', 'h3']
    assert len(api.list_hosts(admin)) == 5


class QuotaRecorder:
    """A conductor of RPC API 1.23: projects' own limits."""

    target = messaging.Target(version='1.23')

    def __init__(self):
        self.calls = []

    def set_quota(self, ctxt, project_id, limits):
        self.calls.append(('set', project_id, limits))
        return {'project_id': project_id}

    def delete_quota(self, ctxt, project_id):
        self.calls.append(('delete', project_id))


def test_quota_writes_go_only_to_conductors_of_1_23(serve, conductor_cap):
    """A conductor before 1.23 has no set_quota: the client answers 409
    (Conflict) without sending; from 1.23 on, both calls reach it."""
    endpoint = QuotaRecorder()
    serve(endpoint)
    admin = context.get_admin_context()
    conductor_cap('1.22')
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    with pytest.raises(exception.Conflict, match='upgraded'):
        api.set_quota(admin, 'p1', {'FPGA': 2})
    with pytest.raises(exception.Conflict, match='upgraded'):
        api.delete_quota(admin, 'p1')
    assert endpoint.calls == []
    conductor_cap('1.23')
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    assert api.set_quota(admin, 'p1', {'FPGA': 2}) == {'project_id': 'p1'}
    api.delete_quota(admin, 'p1')
    assert endpoint.calls == [('set', 'p1', {'FPGA': 2}), ('delete', 'p1')]


class LeaseRecorder:
    """A conductor of ``version`` that records the leases asked of it."""

    def __init__(self, version):
        self.target = messaging.Target(version=version)
        self.calls = []

    def create_lease(self, ctxt, values, **newer):
        self.calls.append((values, newer))
        return {'uuid': 'l1'}


@pytest.mark.parametrize('cap', ['1.23', None])
def test_preempt_goes_only_to_conductors_of_1_24(serve, conductor_cap, cap):
    """An older conductor preempts whoever asks: a lease that may not
    preempt is refused (409) without being sent to it, an admin's is sent
    without the argument; from 1.24 on, the decision travels."""
    endpoint = LeaseRecorder(cap or '1.24')
    serve(endpoint)
    if cap:
        conductor_cap(cap)
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    admin = context.get_admin_context()
    if cap:
        with pytest.raises(exception.Conflict, match='upgraded'):
            api.create_lease(admin, {'count': 1})
    else:
        api.create_lease(admin, {'count': 1})
    api.create_lease(admin, {'count': 2}, preempt=True)
    assert endpoint.calls == ([({'count': 2}, {})] if cap else [
        ({'count': 1}, {'preempt': False}),
        ({'count': 2}, {'preempt': True})])


class CompatRecorder:
    """A conductor of ``version`` recording unbinds and profiles."""

    def __init__(self, version):
        self.target = messaging.Target(version=version)
        self.calls = []

    def unbind_arqs(self, ctxt, uuids, **newer):
        self.calls.append(('unbind', uuids, newer))

    def create_device_profile(self, ctxt, name, groups, description,
                              **newer):
        self.calls.append(('profile', name, newer))
        return {'name': name}


@pytest.mark.parametrize('cap', ['1.24', None])
def test_cyborg_compatible_arguments_go_only_to_conductors_of_1_25(
        serve, conductor_cap, cap):
    """An older conductor unbinds Bound requests for anyone and makes its
    own profile uuids: an unbind that may not take a device from a guest,
    and a profile with a posted uuid, are refused (409) without being
    sent to it; Nova's unbind and a profile without a uuid go as before."""
    endpoint = CompatRecorder(cap or '1.25')
    serve(endpoint)
    if cap:
        conductor_cap(cap)
    api = conductor_rpcapi.ConductorAPI(timeout=TIMEOUT)
    admin = context.get_admin_context()
    for refused in (lambda: api.unbind_arqs(admin, ['a1'],
                                            unbind_bound=False),
                    lambda: api.create_device_profile(admin, 'p', [], None,
                                                      uuid='u1')):
        if cap:
            with pytest.raises(exception.Conflict, match='upgraded'):
                refused()
        else:
            refused()
    api.unbind_arqs(admin, ['a2'], unbind_bound=True)
    api.create_device_profile(admin, 'q', [], None)
    assert endpoint.calls == ([
        ('unbind', ['a2'], {}), ('profile', 'q', {})] if cap else [
        ('unbind', ['a1'], {'unbind_bound': False}),
        ('profile', 'p', {'uuid': 'u1'}),
        ('unbind', ['a2'], {'unbind_bound': True}),
        ('profile', 'q', {'uuid': None})])
