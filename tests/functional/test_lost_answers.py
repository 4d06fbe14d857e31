"""A write whose answer the broker lost (the node holding the API's reply
queue died: tests/cluster/test_rabbitmq_node.py) is answered from the
change log, where the conductor kept its answer, once no conductor can
carry it out any more; one that never reached a conductor is still the
503 of issue 28. The settle wait is on the test's clock, not slept."""

import datetime
import time

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi
from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests.functional import cloud as cloud_module

PROFILE = 'lost-answers'


class Clock:
    """rpc's settle clock: a sleep only moves it."""

    def __init__(self):
        self.now = time.monotonic()

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.fixture
def cloud():
    """A cloud configured as on a RabbitMQ cluster (docs/ha.md): its API
    asks for lost answers, its conductor keeps them; 0, the default,
    neither."""
    cloud = cloud_module.Cloud(
        overrides={('api', 'lost_answer_timeout'): 10}).start()
    yield cloud
    cloud.stop()


@pytest.fixture
def profile(cloud):
    status, body = cloud.call('POST', '/v2/device_profiles', {
        'name': PROFILE, 'groups': [{'resources:FPGA': '1'}]})
    assert status == 201, body
    return PROFILE


def _answers_lost(monkeypatch, delivered, lost='create_arqs',
                  kept=True):
    """Call ``lost`` gets no answer; ``delivered``: its message reached
    the conductor, which carried it out (else it never left); ``kept``:
    the conductor kept its answer (else it died before: the change row
    holds none). Returns the answers the conductor gave."""
    real = rpc.call_reaching_broker
    given = []

    def lossy(cctxt, ctxt, method, **kwargs):
        if method != lost:
            return real(cctxt, ctxt, method, **kwargs)
        if delivered:
            given.append(real(cctxt, ctxt, method, **kwargs))
            if not kept:
                with db_api.writer() as session:
                    session.execute(sa.update(models.Change).where(
                        models.Change.request_id == ctxt.request_id)
                        .values(reply=None))
        raise messaging.MessagingTimeout('the answer was lost')
    monkeypatch.setattr(rpc, 'call_reaching_broker', lossy)
    monkeypatch.setattr(rpc, '_settle_clock', Clock())
    return given


def _arqs(cloud):
    status, body = cloud.call('GET', '/v2/accelerator_requests')
    assert status == 200, body
    return sorted(arq['uuid'] for arq in body['arqs'])


def test_a_lost_answer_is_read_from_the_change_log(cloud, profile,
                                                   monkeypatch):
    _answers_lost(monkeypatch, delivered=True)
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    created = api.create_arqs(context.get_admin_context(), profile, None)
    # The answer the conductor sent, and the one ARQ it made.
    assert [arq['device_profile_name'] for arq in created] == [PROFILE]
    assert _arqs(cloud) == [created[0]['uuid']]


def test_a_write_that_never_arrived_is_still_a_503(cloud, profile,
                                                   monkeypatch):
    _answers_lost(monkeypatch, delivered=False)
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    with pytest.raises(rpc.WriteNotDone):
        api.create_arqs(context.get_admin_context(), profile, None)
    assert _arqs(cloud) == []


def test_a_create_done_but_not_kept_is_answered_again(cloud, profile,
                                                      monkeypatch):
    """Its conductor died between the COMMIT and keeping the answer: the
    ARQs the change log names are the answer (conductor/lost_answers.py),
    the same as the one lost."""
    given = _answers_lost(monkeypatch, delivered=True, kept=False)
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    created = api.create_arqs(context.get_admin_context(), profile, None)
    assert created == given[0]
    assert _arqs(cloud) == [created[0]['uuid']]


def test_a_delete_done_but_not_kept_is_answered_again(cloud, profile,
                                                      monkeypatch):
    status, body = cloud.call('POST', '/v2/accelerator_requests',
                              {'device_profile_name': profile})
    assert status == 201, body
    _answers_lost(monkeypatch, delivered=True, lost='delete_arqs',
                  kept=False)
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    assert api.delete_arqs(context.get_admin_context(),
                           uuids=[body['arqs'][0]['uuid']]) is None
    assert _arqs(cloud) == []


def test_a_profile_done_but_not_kept_is_answered_again(cloud, monkeypatch):
    """A device profile never changes once made: its answer is read back
    by the uuid the change log names, the same as the one lost."""
    _answers_lost(monkeypatch, delivered=True,
                  lost='create_device_profile', kept=False)
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    made = api.create_device_profile(context.get_admin_context(), 'p2',
                                     [{'resources:FPGA': '1'}], None)
    status, body = cloud.call('GET', '/v2/device_profiles')
    assert [(p['uuid'], p['name']) for p in body['device_profiles']] == [
        (made['uuid'], 'p2')], body
    assert made == api.get_device_profile(context.get_admin_context(),
                                          uuid=made['uuid'])


def test_a_lease_done_but_not_kept_is_still_a_503(cloud, monkeypatch):
    """A lease's answer is its state when made, moved on since: not made
    again; the 503 stands (its text sends the client to the change log,
    which names the lease)."""
    device = cloud.list_devices()[0]['uuid']
    start = datetime.datetime.utcnow() + datetime.timedelta(days=2)
    _answers_lost(monkeypatch, delivered=True, lost='create_lease',
                  kept=False)
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    lessee = context.get_admin_context()
    lessee.project_id = 'lessee'
    with pytest.raises(rpc.WriteNotDone):
        api.create_lease(lessee, {
            'devices': [device], 'timezone': 'UTC',
            'start': start.replace(microsecond=0).isoformat(),
            'end': (start + datetime.timedelta(hours=1)).replace(
                microsecond=0).isoformat()})
    status, body = cloud.call('GET', '/v2/leases')
    [lease] = body['leases']
    status, body = cloud.call('GET', '/v2/changes?target=%s'
                              % lease['uuid'])
    assert status == 200, body
    assert [c['method'] for c in body['changes']] == ['create_lease'], body


def _delivered_twice(monkeypatch, method):
    """Each call of ``method`` reaches the conductor twice, as when a
    RabbitMQ node is lost after a conductor took the message and before
    the broker had its acknowledgement (tests/cluster, ``leader``).
    Returns the two answers of each call."""
    real = rpc.call_reaching_broker
    answers = []

    def twice(cctxt, ctxt, called, **kwargs):
        if called != method:
            return real(cctxt, ctxt, called, **kwargs)
        answers.append([real(cctxt, ctxt, called, **kwargs)
                        for _ in range(2)])
        return answers[-1][1]
    monkeypatch.setattr(rpc, 'call_reaching_broker', twice)
    return answers


def _one_arq_made_by_a_create_delivered_twice(cloud, monkeypatch,
                                              profile):
    answers = _delivered_twice(monkeypatch, 'create_arqs')
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    created = api.create_arqs(context.get_admin_context(), profile, None)
    [(first, second)] = answers
    assert first == second == created
    assert _arqs(cloud) == [created[0]['uuid']]


def test_a_create_delivered_twice_makes_one_arq(cloud, profile,
                                                monkeypatch):
    """Where answers are kept, the second delivery is looked up before
    it runs and answered with the first one's kept answer."""
    _one_arq_made_by_a_create_delivered_twice(cloud, monkeypatch, profile)


@pytest.mark.parametrize('kept', [True, False])
def test_a_profile_delivered_twice_is_made_once(cloud, monkeypatch, kept):
    """The second delivery is looked up before it runs: answered with the
    kept answer; with none kept (a conductor that keeps none, or died
    before), answered with the profile read back (the same answer); and
    nothing done again either way (the profile's unique name would have
    made it a 409)."""
    answers = []
    real = rpc.call_reaching_broker

    def twice(cctxt, ctxt, called, **kwargs):
        if called != 'create_device_profile':
            return real(cctxt, ctxt, called, **kwargs)
        answers.append(real(cctxt, ctxt, called, **kwargs))
        if not kept:
            with db_api.writer() as session:
                session.execute(sa.update(models.Change).values(reply=None))
        try:
            answers.append(real(cctxt, ctxt, called, **kwargs))
        except Exception as error:      # noqa: BLE001 - what it says
            answers.append(error)
        return answers[0]
    monkeypatch.setattr(rpc, 'call_reaching_broker', twice)
    api = rpcapi.ConductorAPI(timeout=5, settle_writes=True)
    api.create_device_profile(context.get_admin_context(), 'once',
                              [{'resources:FPGA': '1'}], None)
    assert answers[1] == answers[0]
    status, body = cloud.call('GET', '/v2/device_profiles')
    assert [p['name'] for p in body['device_profiles']] == ['once']


@pytest.fixture
def plain_cloud():
    """A cloud on one broker (the default): no answer kept, no look-up
    before a call runs."""
    cloud = cloud_module.Cloud().start()
    yield cloud
    cloud.stop()


def test_on_one_broker_a_create_delivered_twice_makes_one_arq(
        plain_cloud, monkeypatch):
    """The second delivery runs; its write is refused by the change
    log's unique call id, rolled back, and the call answered with the
    ARQs the first one made (read back: conductor/lost_answers.py)."""
    status, body = plain_cloud.call('POST', '/v2/device_profiles', {
        'name': PROFILE, 'groups': [{'resources:FPGA': '1'}]})
    assert status == 201, body
    _one_arq_made_by_a_create_delivered_twice(plain_cloud, monkeypatch,
                                              PROFILE)
