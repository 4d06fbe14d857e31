"""Versioned notifications as a consumer reads them: from the real
RabbitMQ, on ``versioned_notifications``, sent by the conductor process
of a deployment with ``[notifications] notification_format = both``;
each checked against its sample in docs/notifications.md (the functional
tests, tests/functional/test_notifications.py, drive every type).
"""

import contextlib
import copy
import datetime
import threading
import uuid

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from tests.functional.test_notifications import like_sample

from . import infra

pytestmark = pytest.mark.integration

CONFIG = """
[oslo_messaging_notifications]
driver = messagingv2

[notifications]
notification_format = both

[health]
recovery_checks = 1

[rollouts]
interval = 0.5

[leases]
check_interval = 1
grace_seconds = 0
"""
# A bitstream the agent has (a rollout of it succeeds) and one it has not.
PRESENT, ABSENT = 'bs-told', 'bs-not-on-the-host'



class Consumer:
    """What a consumer of the versioned topic received, in order."""

    def __init__(self):
        self.received = []
        self._lock = threading.Lock()

    def _got(self, priority, event_type, payload, publisher_id):
        with self._lock:
            self.received.append((priority.upper(), event_type, payload,
                                  publisher_id))

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('info', event_type, payload, publisher_id)

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('warn', event_type, payload, publisher_id)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('error', event_type, payload, publisher_id)

    def one(self, event_type, **data):
        """The notification of ``event_type`` whose data has ``data``,
        once it came; checked against its sample."""
        def found():
            with self._lock:
                return next(((p, payload, publisher) for p, e, payload,
                             publisher in self.received if e == event_type
                             and all(payload['cyborg_like_object.data'].get(k)
                                     == v for k, v in data.items())), None)
        priority, payload, publisher = infra.wait_for(
            found, message='No %s notification with %s' % (event_type,
                                                           data))
        assert publisher.startswith('accelerator.conductor.')
        return like_sample(event_type, priority, payload)


@contextlib.contextmanager
def consuming(transport_url):
    conf = cfg.ConfigOpts()
    conf([], project='notification-consumer', default_config_files=[])
    transport = messaging.get_notification_transport(conf, url=transport_url)
    consumer = Consumer()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic='versioned_notifications')],
        [consumer], executor='threading')
    listener.start()
    try:
        yield consumer
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    workdir = tmp_path_factory.mktemp('notifications')
    bitstreams = workdir / 'bitstreams'
    bitstreams.mkdir()
    (bitstreams / PRESENT).write_text('GBS told\n')
    with infra.running_deployment(
            'mariadb', str(workdir), wait_for_devices=infra.all_devices,
            extra_config=CONFIG + '[agent]\nbitstream_dir = %s\n'
            % bitstreams) as dep:
        dep.wait_host_up()
        yield dep


def _bind_fpga_arq(dep, profile, deployable_name):
    """An ARQ of a new one-FPGA ``profile``, bound as Nova binds it to
    the deployable named so; returns (ARQ uuid, instance uuid)."""
    rp_uuid = next(d['rp_uuid'] for d in dep.list_ok('deployables')
                   if d['name'] == deployable_name)
    dep.call('POST', '/v2/device_profiles', {
        'name': profile, 'groups': [{'resources:FPGA': '1'}]}, 201)
    arq = dep.call('POST', '/v2/accelerator_requests',
                   {'device_profile_name': profile}, 201
                   ).json()['arqs'][0]['uuid']
    instance = str(uuid.uuid4())
    dep.call('PATCH', '/v2/accelerator_requests', {arq: [
        {'op': 'add', 'path': '/hostname', 'value': dep.host},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]}, 202)
    return arq, instance


def test_a_binding_unbound_and_deleted(deployment):
    dep = deployment
    with consuming(dep.transport_url) as consumer:
        arq, instance = _bind_fpga_arq(dep, 'told', 'region1')
        bound = consumer.one('accelerator_request.bound', uuid=arq)
        assert (bound['state'], bound['instance_uuid'],
                bound['hostname']) == ('Bound', instance, dep.host)
        dep.call('PATCH', '/v2/accelerator_requests', {arq: [
            {'op': 'remove', 'path': path}
            for path in ('/hostname', '/device_rp_uuid', '/instance_uuid')]},
            202)
        assert consumer.one('accelerator_request.unbound',
                            uuid=arq)['state'] == 'Unbound'
        dep.call('DELETE', '/v2/accelerator_requests?arqs=%s' % arq,
                 expected=204)
        assert consumer.one('accelerator_request.deleted',
                            uuid=arq)['project_id'] is not None


def test_a_binding_that_fails(deployment):
    dep = deployment
    with consuming(dep.transport_url) as consumer:
        # Nova names a GPU for an FPGA request: the binding fails.
        arq, _ = _bind_fpga_arq(dep, 'misplaced', 'gpu0')
        failed = consumer.one('accelerator_request.bind_failed', uuid=arq)
        assert failed['state'] == 'BindFailed'
        assert 'not FPGA' in failed['state_reason']


def test_an_operation_started_and_ended(deployment):
    dep = deployment
    with consuming(dep.transport_url) as consumer:
        region = next(d for d in dep.list_ok('deployables')
                      if d['name'] == 'region0')
        started = dep.call(
            'PATCH', '/v2/deployables/%s/program' % region['uuid'],
            [{'op': 'replace', 'path': '/bitstream_id',
              'value': ABSENT}], 202)
        operation = started.headers['Location'].rsplit('/', 1)[1]
        start = consumer.one('operation.start', uuid=operation)
        assert (start['type'], start['state'], start['target_uuid']) == (
            'program', 'running', region['uuid'])
        # The agent has no such bitstream: the operation fails, and its
        # end is told all the same.
        end = consumer.one('operation.end', uuid=operation)
        assert end['state'] == 'failed'


def _gpu(health, inventory=infra.BASE_INVENTORY):
    """The inventory with the GPU reading ``health``."""
    document = copy.deepcopy(inventory)
    [gpu] = [d for d in document['devices'] if d['type'] == 'GPU']
    gpu['health'] = health
    return document


def test_a_device_failing_drained_and_back(deployment):
    dep = deployment
    gpu = next(d['uuid'] for d in dep.list_ok('devices')
               if d['type'] == 'GPU')
    with consuming(dep.transport_url) as consumer:
        try:
            dep.write_inventory(_gpu({'healthy': False,
                                      'reasons': ['Xid 79']}))
            unhealthy = consumer.one('device.unhealthy', device_uuid=gpu)
            drained = consumer.one('device.drained', device_uuid=gpu)
            assert (unhealthy['reasons'], drained['service_state']) == (
                ['Xid 79'], 'drained')
        finally:
            dep.write_inventory(_gpu({'healthy': True}))
        back = consumer.one('device.back_in_service', device_uuid=gpu)
        assert (back['health'], back['service_state']) == ('healthy',
                                                           'serving')


def _rollout(dep, image, waves):
    return dep.call('POST', '/v2/rollouts', {
        'kind': 'bitstream', 'image': image,
        'selector': {'hostnames': [dep.host]},
        'strategy': {'canary': 1, 'waves': waves, 'workloads': 'skip'}},
        201).json()['uuid']


def test_rollout_waves_and_a_rollback(deployment):
    dep = deployment
    with consuming(dep.transport_url) as consumer:
        done = _rollout(dep, PRESENT, ['100%'])
        for wave in (0, 1):
            consumer.one('rollout.wave.start', rollout_uuid=done, wave=wave)
            ended = consumer.one('rollout.wave.end', rollout_uuid=done,
                                 wave=wave)
            assert ended['image'] == PRESENT
        failed = _rollout(dep, ABSENT, ['100%'])
        back = consumer.one('rollout.rolled_back', rollout_uuid=failed)
        assert (back['wave'], back['state']) == (0, 'failed')
        assert back['reason'].startswith('The canary failed.')


def test_a_lease_window_opened_and_closed(deployment):
    dep = deployment
    gpu = next(d['uuid'] for d in dep.list_ok('devices')
               if d['type'] == 'GPU')
    now = infra.utcnow().replace(microsecond=0)
    start = (now - datetime.timedelta(minutes=1)).isoformat()
    # Short, so that the window's end comes within the test.
    end = (now + datetime.timedelta(seconds=5)).isoformat()
    with consuming(dep.transport_url) as consumer:
        lease = dep.call('POST', '/v2/leases', {
            'devices': [gpu], 'start': start, 'end': end,
            'timezone': 'UTC'}, 201).json()['uuid']
        opened = consumer.one('lease.window.open', lease_uuid=lease)
        closed = consumer.one('lease.window.close', lease_uuid=lease)
        assert opened == closed
        assert (opened['starts_at'], opened['ends_at']) == (
            start + '+00:00', end + '+00:00')
