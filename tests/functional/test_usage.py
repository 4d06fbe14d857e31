"""Usage accounting (issue 33): device-seconds from the bind and unbind
times the conductor records, with an injected clock, over binds, an
unbind, a deletion of a bound ARQ and a period boundary. Every figure is
worked out by hand below, and the API, the CLI and the Prometheus
counter must all give it."""

import csv
import datetime
import io
import json

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from cyborg_like.common import context
from cyborg_like.db import usage
from tests.clients import clirun
from tests.functional import cloud as cloud_module
from tests.integration import infra

ARQS = '/v2/accelerator_requests'
P1 = {'X-Project-Id': 'p1', 'X-Roles': 'member,reader'}
P2 = {'X-Project-Id': 'p2', 'X-Roles': 'member,reader'}
ADMIN = {'X-Project-Id': 'admin', 'X-Roles': 'admin,member,reader'}
# The period boundary: the first of the month.
EDGE = datetime.datetime(2026, 3, 1)
MONTH = '2026-02-01T00:00:00Z'
EDGE_TEXT = '2026-03-01T00:00:00Z'
NEXT = '2026-04-01T00:00:00Z'
INSTANCES = ['1ea5e000-0000-4000-8000-00000000000%d' % n for n in (1, 2, 3)]
FPGA_MODEL = 'PAC N3000'


class Clock:
    """What the usage records are written and read by."""

    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now

    def at(self, **delta):
        self.now = EDGE + datetime.timedelta(**delta)


@pytest.fixture
def clock():
    clock = Clock(EDGE)
    usage.set_clock(clock)
    try:
        yield clock
    finally:
        usage.set_clock()


@pytest.fixture
def cloud(tmp_path):
    port = infra.free_port()
    inventory = cloud_module.inventory_copy(tmp_path)
    cloud = cloud_module.Cloud(str(inventory), http=True, overrides={
        ('metrics', 'conductor_listen_port'): port,
        ('metrics', 'fleet_cache_seconds'): 0}).start()
    cloud.metrics_url = 'http://127.0.0.1:%d/metrics' % port
    cloud.inventory = inventory
    try:
        yield cloud
    finally:
        cloud.stop()


def _profiles(cloud):
    for name, group in (('gpu', {'resources:PGPU': '1'}),
                        ('fpga', {'resources:FPGA': '1'})):
        status, body = cloud.call('POST', '/v2/device_profiles',
                                  {'name': name, 'groups': [group]},
                                  headers=ADMIN)
        assert status == 201, body


def _rp_of(cloud, model):
    device_id = next(d['id'] for d in cloud.list_devices()
                     if d['model'] == model)
    return next(d['rp_uuid'] for d in cloud.conductor_api.list_deployables(
        context.get_admin_context(), {}, 100, None,
        'created_at', 'asc') if d['device_id'] == device_id)


def _bind(cloud, headers, profile, model, instance):
    """An ARQ of the project of ``headers``, bound as Nova binds it; its
    uuid once Bound."""
    status, body = cloud.call('POST', ARQS, {'device_profile_name': profile},
                              headers=headers)
    assert status == 201, body
    arq = body['arqs'][0]['uuid']
    status, body = cloud.call('PATCH', ARQS, {arq: [
        {'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
        {'op': 'add', 'path': '/device_rp_uuid',
         'value': _rp_of(cloud, model)},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})
    assert status == 202, body

    def bound():
        _, found = cloud.call('GET', '%s/%s' % (ARQS, arq))
        assert found['state'] != 'BindFailed', found
        return found['state'] == 'Bound'
    cloud.wait_for(bound, timeout=30)
    return arq


def _usage(cloud, query, headers=ADMIN):
    status, body = cloud.call('GET', '/v2/usage?' + query, headers=headers)
    assert status == 200, body
    return body['usage']


def _seconds(rows, key='project_id'):
    return {row[key]: row['device_seconds'] for row in rows}


def _cli(cloud, *args, fmt='json'):
    done = clirun.in_process(
        [clirun.CYBORG_LIKE, '--os-endpoint', cloud.url, 'usage', 'show']
        + list(args) + ['-f', fmt])
    assert done.returncode == 0, done.stderr
    if fmt == 'csv':
        return list(csv.DictReader(io.StringIO(done.stdout)))
    return json.loads(done.stdout)


def _counter(cloud):
    text = requests.get(cloud.metrics_url, timeout=10).text
    return {(s.labels['project_id'], s.labels['resource_class'],
             s.labels['model']): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == 'cyborg_like_usage_device_seconds_total'}


def _story(cloud, clock):
    """The bindings of the test, each step at its time:

    p1's ARQ a (A100):   bound at EDGE-2h,   unbound at EDGE+1h
    p1's ARQ b (T4):     bound at EDGE-30m,  deleted (Bound) at EDGE+15m
    p2's ARQ c (FPGA):   bound at EDGE+10m,  still held at EDGE+90m (now)
    """
    _profiles(cloud)
    clock.at(hours=-2)
    a = _bind(cloud, P1, 'gpu', 'A100', INSTANCES[0])
    clock.at(minutes=-30)
    _bind(cloud, P1, 'gpu', 'T4', INSTANCES[1])
    clock.at(minutes=10)
    _bind(cloud, P2, 'fpga', FPGA_MODEL, INSTANCES[2])
    clock.at(minutes=15)
    # As Nova deletes an instance's requests: the bound ARQ goes.
    status, body = cloud.call('DELETE', '%s?instance=%s' % (ARQS,
                                                             INSTANCES[1]))
    assert status == 204, body
    clock.at(hours=1)
    status, body = cloud.call('PATCH', ARQS, {a: [
        {'op': 'remove', 'path': '/hostname'},
        {'op': 'remove', 'path': '/device_rp_uuid'},
        {'op': 'remove', 'path': '/instance_uuid'}]})
    assert status == 202, body
    clock.at(minutes=90)


def test_usage_by_hand_through_api_cli_and_counter(cloud, clock):
    _story(cloud, clock)

    # February: a's 2 h and b's 30 min before the edge, p1 only.
    february = _usage(cloud, 'start=%s&end=%s' % (MONTH, EDGE_TEXT))
    assert _seconds(february) == {'p1': 2 * 3600 + 30 * 60}
    # March so far (its end is in the future: held c counts up to now):
    # a 1 h and b 15 min after the edge; c 80 min.
    march = _usage(cloud, 'start=%s&end=%s' % (EDGE_TEXT, NEXT))
    assert _seconds(march) == {'p1': 3600 + 15 * 60, 'p2': 80 * 60}
    by_model = _usage(cloud, 'start=%s&project_id=p1&group_by=model'
                      % EDGE_TEXT)
    assert _seconds(by_model, 'model') == {'A100': 3600, 'T4': 15 * 60}
    # The deleted ARQ's binding is still counted, by its instance.
    by_instance = _usage(cloud, 'start=%s&group_by=instance,host'
                         % MONTH)
    assert _seconds(by_instance, 'instance_uuid') == {
        INSTANCES[0]: 3 * 3600, INSTANCES[1]: 45 * 60,
        INSTANCES[2]: 80 * 60}
    assert {row['hostname'] for row in by_instance} == {cloud_module.HOST}

    # The CLI prints the API's figures.
    shown = _cli(cloud, '--start', EDGE_TEXT, '--end', NEXT,
                 '--group-by', 'project,resource_class,model')
    assert {(r['project_id'], r['resource_class'], r['model']):
            r['device_seconds'] for r in shown} == {
        ('p1', 'PGPU', 'A100'): 3600, ('p1', 'PGPU', 'T4'): 15 * 60,
        ('p2', 'FPGA', FPGA_MODEL): 80 * 60}
    assert {r['project_id']: r['device_hours'] for r in _cli(
        cloud, '--start', MONTH, '--end', EDGE_TEXT)} == {'p1': 2.5}
    assert [(r['project_id'], float(r['device_seconds'])) for r in _cli(
        cloud, '--start', EDGE_TEXT, fmt='csv')] == [('p1', 4500),
                                                     ('p2', 4800)]

    # The counter: everything since records began, held c up to now.
    assert _counter(cloud) == {
        ('p1', 'PGPU', 'A100'): 3 * 3600, ('p1', 'PGPU', 'T4'): 45 * 60,
        ('p2', 'FPGA', FPGA_MODEL): 80 * 60}
    # It grows with the held binding, as the API's figure does.
    clock.at(minutes=100)
    assert _counter(cloud)[('p2', 'FPGA', FPGA_MODEL)] == 90 * 60
    # No period given: this month so far.
    assert _seconds(_usage(cloud, ''))['p2'] == 90 * 60


def test_a_member_reads_their_own_projects_usage(cloud, clock):
    _story(cloud, clock)
    mine = _usage(cloud, 'start=%s' % MONTH, headers=P2)
    assert _seconds(mine) == {'p2': 80 * 60}
    assert _usage(cloud, 'start=%s&project_id=p2' % MONTH, headers=P2) == \
        mine
    status, body = cloud.call('GET', '/v2/usage?start=%s&project_id=p1'
                              % MONTH, headers=P2)
    assert status == 403, body


def test_deleting_devices_and_arqs_keeps_their_usage(cloud, clock):
    _story(cloud, clock)
    before = _usage(cloud, 'start=%s&group_by=model,instance' % MONTH)
    # The GPUs a and b were bound to leave the host (no longer held).

    def without_gpus(devices):
        devices[:] = [d for d in devices if d['type'] != 'GPU']
    cloud_module.rewrite_inventory(cloud.inventory, without_gpus)
    assert cloud.services[1].tracker.update_inventory()
    assert [d['model'] for d in cloud.list_devices()] == [FPGA_MODEL]
    assert _usage(cloud, 'start=%s&group_by=model,instance' % MONTH) == \
        before
    assert {m for (_, _, m) in _counter(cloud)} == {'A100', 'T4',
                                                    FPGA_MODEL}


def test_pruning_keeps_the_counter(cloud, clock):
    _story(cloud, clock)
    before = _counter(cloud)
    # 31 days on, a 30-day retention forgets the closed bindings (a, b)
    # but not the held one (c); the counter carries what they counted.
    clock.at(days=31, minutes=90)
    assert usage.prune(30) == 2
    assert usage.prune(30) == 0
    after = _counter(cloud)
    held = 31 * 86400
    assert after == {**before, ('p2', 'FPGA', FPGA_MODEL): 80 * 60 + held}
    assert _seconds(_usage(cloud, 'start=%s' % MONTH)) == {
        'p2': 80 * 60 + held}


@pytest.mark.parametrize('query, words', [
    ('start=2026-02-30', 'start'),
    ('start=yesterday', 'start'),
    ('start=%s&end=%s' % (EDGE_TEXT, MONTH), 'before its end'),
    ('start=%s&group_by=colour' % MONTH, 'group_by'),
    ('start=%s&colour=red' % MONTH, 'colour'),
], ids=['no-such-day', 'not-a-time', 'end-before-start', 'bad-dimension',
        'unknown-parameter'])   # no ':' in an id: gabbi takes it for its own
def test_bad_queries_are_refused(cloud, query, words):
    status, body = cloud.call('GET', '/v2/usage?' + query, headers=ADMIN)
    assert status == 400, body
    assert words in json.dumps(body)
