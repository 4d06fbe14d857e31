"""CADF audit events of the API's changes, read as an operator's audit
pipeline reads them: from the RabbitMQ notification queue.

The API runs as a real process behind auth_token and the real Keystone of
``keystone_cloud``, with ``[oslo_messaging_notifications] driver =
messagingv2`` and the default audit settings (on, since callers are
authenticated; the shipped audit map). An oslo.messaging notification
listener in the test consumes ``notifications.info`` of the deployment's
vhost. The API sends its audit events through a TCP proxy
(``[audit_middleware_notifications] transport_url``), which one test
cuts. Each request's ``audit.http.response`` event is found by the
request id the API answered with, and checked field by field: a bind and an
unbind (Nova), a lease (a project member), a rollout (the admin), and
refused calls (outcome failure).
"""

import contextlib
import datetime
import os
import threading
import time
import uuid

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from cyborg_like.common import states
from . import infra
from . import keystone as ks
from .tcpproxy import TcpProxy

pytestmark = pytest.mark.integration

EVENT_URI = 'http://schemas.dmtf.org/cloud/audit/1.0/event'
USER_URI = 'service/security/account/user'
ARQS_URI = 'service/accelerator/accelerator_requests'
PROFILE = 'audit-fpga'
IMAGE = 'bs-audit'
NOTIFICATIONS = """
[oslo_messaging_notifications]
driver = messagingv2
"""
AUDIT_TRANSPORT = """
[audit_middleware_notifications]
transport_url = %s
"""
# A change request while the audit events cannot be sent is answered at
# once: each of its two events is given up after [audit]
# notification_retry (1) reconnection. Measured: see the test's output.


class AuditPipeline:
    """What an audit pipeline receives: the audit events of the queue, by
    event type and request id."""

    def __init__(self):
        self.events = {}
        self.publishers = set()
        self._lock = threading.Lock()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        if not event_type.startswith('audit.http.'):
            return  # the conductor's notifications share the queue
        request_id = payload['initiator'].get('request_id')
        with self._lock:
            self.events[(event_type, request_id)] = payload
            self.publishers.add(publisher_id)

    def event(self, response, event_type='audit.http.response'):
        """The event of the request ``response`` answered, once it came."""
        key = (event_type, response.headers['X-OpenStack-Request-Id'])
        return infra.wait_for(
            lambda: self.events.get(key),
            message='No %s event of request %s' % key)


@contextlib.contextmanager
def listening(transport_url):
    """An :class:`AuditPipeline` fed by a notification listener on the
    ``notifications`` topic of ``transport_url``."""
    conf = cfg.ConfigOpts()
    conf([], project='audit-pipeline', default_config_files=[])
    transport = messaging.get_notification_transport(conf, url=transport_url)
    pipeline = AuditPipeline()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic='notifications')], [pipeline],
        executor='threading')
    listener.start()
    try:
        yield pipeline
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()


@pytest.fixture(scope='module')
def audit_proxy():
    """The path of the API's audit events to the broker (the rest of the
    deployment's messaging goes straight to it)."""
    with TcpProxy(infra.RABBIT_HOST, infra.RABBIT_PORT) as proxy:
        yield proxy


@pytest.fixture(scope='module')
def deployment(keystone_cloud, audit_proxy, tmp_path_factory):
    """One MariaDB deployment authenticating with Keystone, its
    notifications on the broker (the audit events through
    ``audit_proxy``); the agent can program IMAGE."""
    workdir = str(tmp_path_factory.mktemp('audit'))
    bitstreams = os.path.join(workdir, 'bitstreams')
    os.mkdir(bitstreams)
    with open(os.path.join(bitstreams, IMAGE), 'w') as f:
        f.write('GBS audit\n')
    with infra.rabbitmq_vhost() as transport_url, \
            infra.fresh_database('mariadb') as db_url:
        proxied = transport_url.replace(
            '%s:%d' % (infra.RABBIT_HOST, infra.RABBIT_PORT),
            '%s:%d' % audit_proxy.address)
        dep = ks.KeystoneDeployment(
            'mariadb', workdir, transport_url, db_url, keystone_cloud,
            extra_config=NOTIFICATIONS + AUDIT_TRANSPORT % proxied
            + '[agent]\nbitstream_dir = %s\n' % bitstreams
            + '[rollouts]\ninterval = 0.5\n')
        keystone_cloud.set_accelerator_url(dep.api_url)
        with infra.started(dep, infra.all_devices):
            dep.wait_host_up()
            yield dep


@pytest.fixture(scope='module')
def pipeline(deployment):
    with listening(deployment.transport_url) as found:
        yield found


class Caller:
    """Requests of the test's personas with their Keystone tokens."""

    def __init__(self, dep, keystone):
        self.dep, self.keystone = dep, keystone

    def call(self, method, path, user, status, **kwargs):
        resp = self.dep.request(method, path, self.keystone.token(user),
                                **kwargs)
        assert resp.status_code == status, (method, path, user,
                                            resp.status_code, resp.text)
        return resp

    def who(self, user):
        """(user id, user name, project id) of ``user``."""
        return (self.keystone.user_ids[user], user,
                self.keystone.project_ids[self.keystone.user_projects[user]])


@pytest.fixture(scope='module')
def caller(deployment, keystone_cloud):
    c = Caller(deployment, keystone_cloud)
    deployables = {d['name']: d for d in c.call(
        'GET', '/v2/deployables', 'admin', 200).json()['deployables']}
    c.rp_uuid = deployables['region1']['rp_uuid']
    devices = c.call('GET', '/v2/devices', 'admin', 200).json()['devices']
    c.gpu = next(d['uuid'] for d in devices if d['type'] == 'GPU')
    c.call('POST', '/v2/device_profiles', 'admin', 201, json={
        'name': PROFILE, 'groups': [{'resources:FPGA': '1'}]})
    return c


def check_event(event, caller, response, user, action, outcome, type_uri,
                target_id):
    """Every field of one audit.http.response event."""
    user_id, user_name, project_id = caller.who(user)
    status = str(response.status_code)
    assert event['typeURI'] == EVENT_URI
    assert event['eventType'] == 'activity'
    assert event['action'] == action
    assert event['outcome'] == outcome
    assert event['reason'] == {'reasonType': 'HTTP', 'reasonCode': status}
    assert event['requestPath'] == response.request.path_url
    assert event['observer'] == {'id': 'target'}
    assert event['id'] and event['eventTime']
    initiator = event['initiator']
    assert initiator['typeURI'] == USER_URI
    assert (initiator['id'], initiator['name'], initiator['project_id']) \
        == (user_id, user_name, project_id)
    assert initiator['request_id'] == \
        response.headers['X-OpenStack-Request-Id']
    assert initiator['host']['address'] == '127.0.0.1'
    assert initiator['credential']['identity_status'] == 'Confirmed'
    # The token is masked, never sent whole.
    token = caller.keystone.token(user)
    assert initiator['credential']['token'] != token
    assert token not in str(event)
    target = event['target']
    assert (target['typeURI'], target['id'], target['name']) == (
        type_uri, target_id, 'cyborg_like')
    # The service's catalog entry (Keystone's, pointed at this API).
    assert {'name': 'public', 'url': caller.dep.api_url} in \
        target['addresses']


def test_bind_and_unbind_by_nova(caller, pipeline):
    arq = caller.call('POST', '/v2/accelerator_requests', 'p1-member', 201,
                      json={'device_profile_name': PROFILE}
                      ).json()['arqs'][0]['uuid']
    bound = caller.call('PATCH', '/v2/accelerator_requests', 'nova', 202,
                        json={arq: [
                            {'op': 'add', 'path': '/hostname',
                             'value': caller.dep.host},
                            {'op': 'add', 'path': '/device_rp_uuid',
                             'value': caller.rp_uuid},
                            {'op': 'add', 'path': '/instance_uuid',
                             'value': str(uuid.uuid4())}]})
    infra.wait_for(lambda: caller.call(
        'GET', '/v2/accelerator_requests/%s' % arq, 'admin', 200
    ).json()['state'] == 'Bound', message='ARQ %s never Bound' % arq)
    unbound = caller.call('PATCH', '/v2/accelerator_requests', 'nova', 202,
                          json={arq: [{'op': 'remove', 'path': path}
                                      for path in ('/hostname',
                                                   '/device_rp_uuid',
                                                   '/instance_uuid')]})
    check_event(pipeline.event(bound), caller, bound, 'nova',
                'update/bind', 'success', ARQS_URI, arq)
    check_event(pipeline.event(unbound), caller, unbound, 'nova',
                'update/unbind', 'success', ARQS_URI, arq)
    # Before the handler ran: the path's view, outcome pending.
    request = pipeline.event(bound, 'audit.http.request')
    assert (request['id'], request['outcome'], request['action']) == (
        pipeline.event(bound)['id'], 'pending', 'update')
    deleted = caller.call('DELETE', '/v2/accelerator_requests?arqs=%s' % arq,
                          'p1-member', 204)
    check_event(pipeline.event(deleted), caller, deleted, 'p1-member',
                'delete', 'success', ARQS_URI, arq)
    # The API's own process sends them.
    assert pipeline.publishers == {'cyborg-like-api'}


def test_lease_by_a_member_and_its_refused_revoke(caller, pipeline):
    # A night three weeks ahead: inside the lease horizon, clear of the
    # binding of the other test.
    night = infra.utcnow() + datetime.timedelta(days=21)
    made = caller.call('POST', '/v2/leases', 'p1-member', 201, json={
        'name': 'audit-lease', 'devices': [caller.gpu], 'timezone': 'UTC',
        'start': night.strftime('%Y-%m-%dT20:00'),
        'end': night.strftime('%Y-%m-%dT23:00')})
    lease = made.json()['uuid']
    check_event(pipeline.event(made), caller, made, 'p1-member', 'create',
                'success', 'service/accelerator/leases', lease)
    # Only an admin may revoke: a member's try is refused by policy.
    refused = caller.call('DELETE', '/v2/leases/%s' % lease, 'p1-member',
                          403)
    check_event(pipeline.event(refused), caller, refused, 'p1-member',
                'delete', 'failure', 'service/accelerator/leases/lease',
                lease)
    revoked = caller.call('DELETE', '/v2/leases/%s' % lease, 'admin', 200)
    check_event(pipeline.event(revoked), caller, revoked, 'admin',
                'delete', 'success', 'service/accelerator/leases/lease',
                lease)


def test_rollout_by_the_admin(caller, pipeline):
    made = caller.call('POST', '/v2/rollouts', 'admin', 201, json={
        'kind': 'bitstream', 'image': IMAGE,
        'strategy': {'canary': 1, 'waves': [1], 'gate_seconds': 0}})
    rollout = made.json()['uuid']
    check_event(pipeline.event(made), caller, made, 'admin', 'create',
                'success', 'service/accelerator/rollouts', rollout)
    # Ended before the next test: the regions it programs are free again
    # (the bind of another test takes one).
    infra.wait_for(lambda: caller.call(
        'GET', '/v2/rollouts/%s' % rollout, 'admin', 200
    ).json()['state'] in states.ROLLOUT_ENDED,
        timeout=120, message='rollout %s never ended' % rollout)


def test_a_call_on_nothing_is_a_failure(caller, pipeline):
    missing = str(uuid.uuid4())
    resp = caller.call('POST', '/v2/rollouts/%s/pause' % missing, 'admin',
                       404)
    check_event(pipeline.event(resp), caller, resp, 'admin', 'update/pause',
                'failure', 'service/accelerator/rollouts/rollout/pause',
                missing)


def test_reads_are_not_audited(caller, pipeline):
    read = caller.call('GET', '/v2/leases', 'p1-member', 200)
    # A change after the read: its event is published after any the read
    # would have had (the read's answer came first), to the same queue.
    marker = caller.call('POST', '/v2/rollouts/%s/abort' % uuid.uuid4(),
                         'admin', 404)
    pipeline.event(marker)
    request_id = read.headers['X-OpenStack-Request-Id']
    assert not [key for key in pipeline.events if key[1] == request_id]


def test_audit_events_that_cannot_be_sent_hold_no_change(
        caller, pipeline, audit_proxy):
    """The API's path to the broker of its audit events is cut: a change
    is still carried out and answered, without its events (the failure
    logged); once the path is back, events flow again."""
    audit_proxy.cut('reset')
    try:
        started = time.monotonic()
        made = caller.call('POST', '/v2/device_profiles', 'admin', 201,
                           json={'name': 'audit-cut',
                                 'groups': [{'resources:PGPU': '1'}]})
        took = time.monotonic() - started
    finally:
        audit_proxy.restore()
    print('a change answered in %.1fs with its audit events unsendable'
          % took)
    assert 'Could not send notification' in \
        caller.dep.services['api'].read_log()
    deleted = caller.call('DELETE', '/v2/device_profiles/%s'
                          % made.json()['uuid'], 'admin', 204)
    check_event(pipeline.event(deleted), caller, deleted, 'admin', 'delete',
                'success', 'service/accelerator/device_profiles/'
                'device_profile', made.json()['uuid'])
