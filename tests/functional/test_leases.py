"""Device leases (/v2/leases, docs/leases.md) on the whole service in one
process (cloud.py): overlap refusal, binding inside and outside a window,
the notice and the unbinding at a window's end with a compressed clock,
the preemption of other projects' bindings at a window's start (notice
before, unbinding after the grace), give-back, revocation, and the
availability feed at boundaries.

Binding checks read the real time; the boundaries' periodic is run here
by hand with a clock of the test's (``_Leases``), so hours of a window
pass in a call.
"""

import contextlib
import datetime
import types
import zoneinfo

import pytest

from cyborg_like.api import policy as api_policy
from cyborg_like.common import context
from cyborg_like.common import states
from cyborg_like.conductor import leases as lease_lib
from cyborg_like.conductor import notifications
from cyborg_like.conf import CONF
from cyborg_like.db import hosts
from tests import fake_nova
from tests.functional import cloud as cloud_module
from tests.functional import test_notifications as notices

PATH = '/v2/leases'
ARQS = '/v2/accelerator_requests'
LESSEE = {'X-Project-Id': 'lessee', 'X-Roles': 'member,reader'}
OTHER = {'X-Project-Id': 'other', 'X-Roles': 'member,reader'}
# An admin of the lessee project: cyborg:lease:preempt allows its leases
# to take devices other projects' workloads hold.
PREEMPTING = {'X-Project-Id': 'lessee', 'X-Roles': 'admin,member,reader'}
T4_PROFILE = {'resources:PGPU': '1', 'trait:CUSTOM_GPU_NVIDIA_T4':
              'required'}


def _local(when):
    """Naive UTC -> the lease's local time string (zone UTC here)."""
    return when.replace(microsecond=0).isoformat()


def _lease(cloud, headers=LESSEE, expected=201, **body):
    body.setdefault('timezone', 'UTC')
    status, shown = cloud.call('POST', PATH, body, headers=headers)
    assert status == expected, shown
    return shown


def _t4(cloud):
    return next(d['uuid'] for d in cloud.list_devices()
                if d['model'] == 'T4')


def _later(days=2, hours=1):
    """A window ``days`` ahead (UTC local times)."""
    start = hosts.utcnow() + datetime.timedelta(days=days)
    return {'start': _local(start),
            'end': _local(start + datetime.timedelta(hours=hours))}


def _monday():
    """The date of a Monday between 2 and 9 days ahead."""
    day = hosts.utcnow().date() + datetime.timedelta(days=2)
    return day + datetime.timedelta(days=-day.weekday() % 7)


def _now_window(minutes_before=1, hours_after=1):
    now = hosts.utcnow()
    return (_local(now - datetime.timedelta(minutes=minutes_before)),
            _local(now + datetime.timedelta(hours=hours_after)))


class Recorder:
    """A notifier that keeps what it is told."""

    def __init__(self):
        self.sent = []

    def info(self, context, event, payload):
        self.sent.append((event, payload))


class _Clock:
    def __init__(self):
        self.now = hosts.utcnow()

    def __call__(self):
        return self.now


def _periodic(cloud, clock, notifier=None):
    manager = cloud.services[0].manager
    return lease_lib.Leases(CONF, manager._release, manager.nova,
                            notifier, clock)


def _arq(cloud, headers, profile='t4'):
    status, body = cloud.call('POST', ARQS, {'device_profile_name': profile},
                              headers=headers)
    assert status == 201, body
    return body['arqs'][0]['uuid']


def _resolved(cloud, arq, headers=None):
    def done():
        _, found = cloud.call('GET', '%s/%s' % (ARQS, arq), headers=headers)
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(done)


def _rp_of(cloud, device_uuid):
    """The resource provider of the deployable of device ``device_uuid``.
    """
    device_id = next(x['id'] for x in cloud.list_devices()
                     if x['uuid'] == device_uuid)
    return next(d['rp_uuid'] for d in cloud.conductor_api.list_deployables(
        context.get_admin_context(), {}, 100, None, 'created_at', 'asc')
        if d['device_id'] == device_id)


def _nova_bind(cloud, arq, device_uuid, instance):
    """Bind ``arq`` as Nova does (PATCH, as the admin) to the deployable
    of device ``device_uuid``; the ARQ once resolved."""
    status, _ = cloud.call('PATCH', ARQS, {arq: [
        {'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
        {'op': 'add', 'path': '/device_rp_uuid',
         'value': _rp_of(cloud, device_uuid)},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})
    assert status == 202
    return _resolved(cloud, arq)


def _schedule(cloud, arq, headers, n):
    status, shown = cloud.call(
        'POST', '%s/%s/schedule' % (ARQS, arq),
        {'instance_uuid': '1ea5e000-0000-4000-8000-%012d' % n},
        headers=headers)
    assert status == 202, shown
    return _resolved(cloud, arq, headers)


@pytest.fixture
def cloud():
    """The conftest's cloud, but its conductor runs no lease periodic of
    its own: each test runs the periodic with its own clock, and one run
    by the service in between (every [leases] check_interval, 30 s) would
    act first on a loaded machine (a window opened before the test's run
    read its cursor)."""
    cloud = cloud_module.Cloud(
        overrides={('leases', 'check_interval'): 3600}).start()
    try:
        yield cloud
    finally:
        cloud.stop()


@pytest.fixture
def t4_profile(cloud):
    status, body = cloud.call('POST', '/v2/device_profiles',
                              {'name': 't4', 'groups': [T4_PROFILE]})
    assert status == 201, body


def test_an_overlapping_lease_is_refused_naming_the_holder_to_the_lessor(
        cloud):
    t4, monday = _t4(cloud), _monday()

    def day(n, time):
        return '%sT%s' % (monday + datetime.timedelta(days=n), time)

    first = _lease(cloud, devices=[t4], start=day(0, '20:00'),
                   end=day(1, '06:00'),
                   recurrence='FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR',
                   timezone='Europe/Berlin', name='nights')
    assert first['state'] == 'active' and first['count'] == 1
    berlin = datetime.datetime.fromisoformat(day(0, '20:00')).replace(
        tzinfo=zoneinfo.ZoneInfo('Europe/Berlin'))
    assert first['window']['starts_at'] == berlin.astimezone(
        datetime.timezone.utc).isoformat()
    # A Tuesday afternoon lease meets no night: granted.
    _lease(cloud, headers=OTHER, devices=[t4], start=day(1, '12:00'),
           end=day(1, '14:00'), timezone='Europe/Berlin')
    # Wednesday 23:00-01:00 meets a night: 409, to the other project
    # saying how many devices were free, not whose lease holds them.
    wednesday = {'devices': [t4], 'start': day(2, '23:00'),
                 'end': day(3, '01:00'), 'timezone': 'Europe/Berlin'}
    status, body = cloud.call('POST', PATH, wednesday, headers=OTHER)
    assert status == 409, body
    assert 'accel.lease.conflict' in body['error_message']
    assert '0 of the 1 device(s) asked are free' in body['error_message']
    assert first['uuid'] not in body['error_message']
    # The lessor (the cloud admin) is told the nights' lease.
    status, body = cloud.call('POST', PATH, wednesday)
    assert status == 409, body
    assert first['uuid'] in body['error_message']
    assert 'accel.lease.conflict' in body['error_message']
    # By profile: the T4 is taken at that time, the A100 is not.
    by_profile = _lease(cloud, headers=OTHER, resource_class='PGPU',
                        count=1, start=day(2, '23:00'), end=day(3, '01:00'),
                        timezone='Europe/Berlin')
    assert by_profile['devices'][0]['uuid'] != t4
    status, body = cloud.call('POST', PATH, {
        'resource_class': 'PGPU', 'count': 1, 'start': day(2, '23:30'),
        'end': day(3, '00:30'), 'timezone': 'Europe/Berlin'},
        headers=OTHER)
    assert status == 409, body
    # Nobody has three GPUs: asked for on that week's Saturday noon, when
    # no lease above holds one (a window from the clock, two days on,
    # met the nights' lease on a Monday evening: CI run 29).
    status, body = cloud.call('POST', PATH, {
        'resource_class': 'PGPU', 'count': 3, 'start': day(5, '12:00'),
        'end': day(5, '13:00'), 'timezone': 'Europe/Berlin'},
        headers=OTHER)
    assert status == 409 and 'accel.lease.no_devices' in \
        body['error_message'], body


@pytest.mark.parametrize('body', [
    {'start': '2030-01-01T10:00', 'end': '2030-01-01T09:00'},
    {'start': '2030-01-01T10:00', 'end': '2030-01-01T11:00',
     'timezone': 'Mars/Olympus'},
    {'start': '2030-01-01T10:00', 'end': '2030-01-02T11:00',
     'recurrence': 'FREQ=DAILY'},
    {'start': '2030-01-01T10:00', 'end': '2030-01-01T11:00',
     'recurrence': 'FREQ=SOMETIMES'},
    {'start': '2030-01-01T10:00+01:00', 'end': '2030-01-01T11:00'},
    {'start': '2099-01-01T10:00', 'end': '2099-01-01T11:00'},
])
def test_invalid_windows_are_refused(cloud, body):
    body = dict({'timezone': 'UTC', 'devices': [_t4(cloud)]}, **body)
    status, shown = cloud.call('POST', PATH, body, headers=LESSEE)
    assert status == 400, shown


def test_inside_the_window_only_the_lessee_binds(cloud, t4_profile):
    start, end = _now_window()
    lease = _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    # Another project's ARQ, bound by Nova (admin) to the T4: refused.
    other = _arq(cloud, OTHER)
    refused = _nova_bind(cloud, other, _t4(cloud),
                         '1ea5e000-0000-4000-8000-000000000001')
    assert refused['state'] == states.BIND_FAILED
    # Its reason says why, naming no lease of another project.
    assert 'leased to another project' in refused['state_reason']
    assert lease['uuid'] not in refused['state_reason']
    # Nor does standalone scheduling offer it to them.
    again = _arq(cloud, OTHER)
    assert _schedule(cloud, again, OTHER, 2)['state'] == \
        states.BIND_FAILED
    # The lessee gets it.
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 3)
    assert mine['state'] == states.BOUND, mine
    assert mine['device_rp_uuid'] == _rp_of(cloud, _t4(cloud))


def test_outside_the_window_anyone_binds(cloud, t4_profile):
    _lease(cloud, devices=[_t4(cloud)], **_later())
    bound = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
    assert bound['state'] == states.BOUND, bound


def test_notice_then_unbind_at_the_end(cloud, t4_profile):
    clock = _Clock()
    notices = Recorder()
    periodic = _periodic(cloud, clock, notices)
    start, end = _now_window(hours_after=2)
    lease = _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 1)
    assert mine['state'] == states.BOUND
    periodic.run()
    _, shown = cloud.call('GET', '%s/%s' % (PATH, lease['uuid']),
                          headers=LESSEE)
    assert shown['window']['state'] == 'open'
    assert shown['window']['ends_at'] == end + '+00:00'
    # An hour and 50 minutes on: the notice (default 15 minutes).
    ends_at = datetime.datetime.fromisoformat(end)
    clock.now = ends_at - datetime.timedelta(minutes=10)
    periodic.run()
    [(event, payload)] = notices.sent
    assert event == 'accelerator.lease.ending'
    assert payload['lease_uuid'] == lease['uuid']
    assert payload['arqs'] == [{'uuid': mine['uuid'],
                                'instance_uuid': mine['instance_uuid']}]
    _, noticed = cloud.call('GET', '%s/%s' % (ARQS, mine['uuid']),
                            headers=LESSEE)
    assert noticed['lease_ends_at'] == end + '+00:00'
    assert noticed['state'] == states.BOUND
    # Run again (another conductor, or a restart): nothing twice.
    periodic.run()
    assert len(notices.sent) == 1
    # Within the grace (default 5 minutes): still bound.
    clock.now = ends_at + datetime.timedelta(minutes=4)
    periodic.run()
    _, still = cloud.call('GET', '%s/%s' % (ARQS, mine['uuid']),
                          headers=LESSEE)
    assert still['state'] == states.BOUND
    clock.now = ends_at + datetime.timedelta(minutes=6)
    periodic.run()
    _, unbound = cloud.call('GET', '%s/%s' % (ARQS, mine['uuid']),
                            headers=LESSEE)
    assert unbound['state'] == states.UNBOUND
    assert 'lease window' in unbound['state_reason']
    assert unbound['lease_ends_at'] is None
    _, shown = cloud.call('GET', '%s/%s' % (PATH, lease['uuid']),
                          headers=LESSEE)
    # Its one window closed: the lease expired.
    assert shown['state'] == 'expired'
    assert [e for e, _ in notices.sent] == ['accelerator.lease.ending',
                                            'accelerator.lease.ended']


def test_versioned_notifications_of_a_window_opened_and_closed(cloud):
    sent = []
    versioned = notifications.Notifier(
        types.SimpleNamespace(notifications=types.SimpleNamespace(
            notification_format='versioned',
            versioned_notifications_topics=['versioned_notifications'])),
        'accelerator.conductor.test', lambda conf, publisher_id,
        topics=None: VersionedRecorder(sent))
    clock = _Clock()
    periodic = _periodic(cloud, clock, versioned)
    start, end = _now_window(hours_after=2)
    lease = _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    periodic.run()
    clock.now = datetime.datetime.fromisoformat(end) + \
        datetime.timedelta(minutes=6)
    periodic.run()
    assert [event for event, _p, _payload in sent] == [
        'lease.window.open', 'lease.window.close']
    for event, priority, payload in sent:
        window = notices.like_sample(event, priority, payload)
        assert window == {'lease_uuid': lease['uuid'],
                          'project_id': 'lessee',
                          'starts_at': start + '+00:00',
                          'ends_at': end + '+00:00'}


class VersionedRecorder:
    """Stands for oslo.messaging's Notifier of the versioned topics."""

    def __init__(self, sent):
        self.sent = sent

    def info(self, context, event, payload):
        self.sent.append((event, 'INFO', payload))


def test_give_back_ends_the_lease_and_frees_the_device(cloud, t4_profile):
    start, end = _now_window()
    lease = _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 1)
    assert mine['state'] == states.BOUND
    # Another project can neither see nor give it back.
    status, _ = cloud.call('POST', '%s/%s/give_back' % (PATH, lease['uuid']),
                           headers=OTHER)
    assert status == 404
    status, ended = cloud.call(
        'POST', '%s/%s/give_back' % (PATH, lease['uuid']), headers=LESSEE)
    assert status == 200, ended
    assert ended['state'] == 'returned' and ended['window'] is None
    _, arq = cloud.call('GET', '%s/%s' % (ARQS, mine['uuid']),
                        headers=LESSEE)
    assert arq['state'] == states.UNBOUND
    status, again = cloud.call(
        'POST', '%s/%s/give_back' % (PATH, lease['uuid']), headers=LESSEE)
    assert status == 409, again
    # The device is the owner's again: anyone binds.
    bound = _schedule(cloud, _arq(cloud, OTHER), OTHER, 2)
    assert bound['state'] == states.BOUND, bound


def test_the_lessor_sees_and_revokes(cloud):
    start, end = _now_window()
    lease = _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    _lease(cloud, headers=OTHER, resource_class='FPGA', count=1,
           traits={'CUSTOM_FPGA_INTEL_N3000': 'required'}, **_later())
    _, mine = cloud.call('GET', PATH, headers=LESSEE)
    assert [x['uuid'] for x in mine['leases']] == [lease['uuid']]
    _, every = cloud.call('GET', PATH)
    assert len(every['leases']) == 2
    _, page = cloud.call('GET', PATH + '?limit=1')
    assert len(page['leases']) == 1 and 'next' in page
    status, _ = cloud.call('DELETE', '%s/%s' % (PATH, lease['uuid']),
                           headers=LESSEE)
    assert status == 403
    status, revoked = cloud.call('DELETE', '%s/%s' % (PATH, lease['uuid']))
    assert status == 200 and revoked['state'] == 'revoked', revoked
    _, active = cloud.call('GET', PATH + '?state=active')
    assert [x['project_id'] for x in active['leases']] == ['other']


def test_the_feed_counts_leased_devices_reserved(cloud):
    clock = _Clock()
    periodic = _periodic(cloud, clock)
    _, before = cloud.call('GET', '/v2/availability?group_by=model')
    t4 = next(g for g in before['groups'] if g['model'] == 'T4')
    assert (t4['free'], t4['reserved']) == (1, 0)
    start, end = _now_window(hours_after=2)
    _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    _lease(cloud, devices=[_t4(cloud)], **_later())
    cursor = cloud.call('GET', '/v2/availability')[1]['cursor']
    periodic.run()
    _, now = cloud.call('GET', '/v2/availability?group_by=model')
    t4 = next(g for g in now['groups'] if g['model'] == 'T4')
    assert (t4['free'], t4['reserved']) == (0, 1)
    # The window opening is a change the cursor sees.
    _, delta = cloud.call('GET', '/v2/availability?since=%d' % cursor)
    assert delta['hosts'] == [cloud_module.HOST]
    # Three hours ahead the window is over; not so an hour ahead.
    later = _local(hosts.utcnow() + datetime.timedelta(hours=3))
    _, ahead = cloud.call('GET', '/v2/availability?group_by=model&at=%sZ'
                          % later)
    t4 = next(g for g in ahead['groups'] if g['model'] == 'T4')
    assert (t4['free'], t4['reserved'], ahead['at']) == (1, 0, later + 'Z')
    soon = _local(hosts.utcnow() + datetime.timedelta(hours=1))
    _, ahead = cloud.call('GET', '/v2/availability?group_by=model&at=%sZ'
                          % soon)
    t4 = next(g for g in ahead['groups'] if g['model'] == 'T4')
    assert (t4['free'], t4['reserved']) == (0, 1)
    status, _ = cloud.call('GET', '/v2/availability?at=2099-01-01T00:00Z')
    assert status == 400


def test_a_conductor_restarted_between_notice_and_end_resumes(
        cloud, t4_profile):
    """The periodic keeps nothing in memory: a new conductor (a restart)
    finds the window noticed in the database, gives no second notice and
    unbinds at the end."""
    clock = _Clock()
    first_notices = Recorder()
    start, end = _now_window(hours_after=2)
    lease = _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 1)
    ends_at = datetime.datetime.fromisoformat(end)
    clock.now = ends_at - datetime.timedelta(minutes=1)
    _periodic(cloud, clock, first_notices).run()
    assert [e for e, _ in first_notices.sent] == ['accelerator.lease.ending']
    # The first conductor is gone; another one, hours late.
    later_notices = Recorder()
    clock.now = ends_at + datetime.timedelta(hours=3)
    restarted = _periodic(cloud, clock, later_notices)
    restarted.run()
    _, unbound = cloud.call('GET', '%s/%s' % (ARQS, mine['uuid']),
                            headers=LESSEE)
    assert unbound['state'] == states.UNBOUND
    assert [e for e, _ in later_notices.sent] == ['accelerator.lease.ended']
    restarted.run()
    assert len(later_notices.sent) == 1
    _, shown = cloud.call('GET', '%s/%s' % (PATH, lease['uuid']),
                          headers=LESSEE)
    assert shown['state'] == 'expired'


def test_a_missed_window_still_unbinds_the_lessee(cloud, t4_profile):
    """No conductor ran the periodic during the whole window (all were
    down): the lessee bound meanwhile by the times alone, and the first
    run after it closes the window and unbinds."""
    clock = _Clock()
    start, end = _now_window(hours_after=1)
    _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 1)
    assert mine['state'] == states.BOUND
    clock.now = datetime.datetime.fromisoformat(end) + datetime.timedelta(
        days=1)
    _periodic(cloud, clock).run()
    _, unbound = cloud.call('GET', '%s/%s' % (ARQS, mine['uuid']),
                            headers=LESSEE)
    assert unbound['state'] == states.UNBOUND


@contextlib.contextmanager
def _with_nova(action='shelve_offload'):
    """(cloud, Nova): a cloud whose [nova] is a stand-in speaking Nova's
    API (fake_nova.FakeNova), with the T4 profile."""
    nova = fake_nova.FakeNova()
    nova.thread.start()
    cloud = cloud_module.Cloud(overrides={
        ('nova', 'auth_type'): 'none',
        ('nova', 'endpoint_override'): 'http://127.0.0.1:%d'
        % nova.server_address[1],
        ('leases', 'preemption_action'): action,
        # Only the test's periodic (its clock) asks Nova the steps.
        ('leases', 'check_interval'): 3600}).start()
    try:
        status, _ = cloud.call('POST', '/v2/device_profiles',
                               {'name': 't4', 'groups': [T4_PROFILE]})
        assert status == 201
        yield cloud, nova
    finally:
        cloud.stop()
        nova.shutdown()


@pytest.fixture
def nova_cloud():
    with _with_nova() as found:
        yield found


def _nova_events(nova):
    """(tag, server, status) of every external event Nova was sent."""
    return [(e['tag'], e['server_uuid'], e['status'])
            for _, _, body in nova.calls for e in body['events']]


def test_nova_is_asked_to_release_a_lessees_instance_at_the_end(
        nova_cloud):
    """A lessee's ARQ Nova bound (an admin or Nova placing the lessee's
    VM by hand inside the window) is not unbound behind Nova's back at
    the end: Nova is asked to shelve the instance, and no failed binding
    event (which a running instance ignores) is sent."""
    cloud, nova = nova_cloud
    clock = _Clock()
    start, end = _now_window()
    t4 = _t4(cloud)
    _lease(cloud, devices=[t4], start=start, end=end)
    arq = _arq(cloud, LESSEE)
    instance = '1ea5e000-0000-4000-8000-000000000009'
    assert _nova_bind(cloud, arq, t4, instance)['state'] == \
        states.BOUND
    cloud.wait_for(lambda: len(nova.calls) == 1)
    clock.now = datetime.datetime.fromisoformat(end) + \
        datetime.timedelta(hours=1)
    _periodic(cloud, clock).run()
    assert nova.actions == [(instance, 'shelve')]
    _, held = cloud.call('GET', '%s/%s' % (ARQS, arq))
    assert held['state'] == states.BOUND
    assert _nova_events(nova) == [(arq, instance, 'completed')]


def _soon(hours=2):
    """A window starting ``hours`` ahead, an hour long: (start, end) as
    local (UTC) strings and the start as naive UTC."""
    start = hosts.utcnow().replace(microsecond=0) + datetime.timedelta(
        hours=hours)
    return (_local(start), _local(start + datetime.timedelta(hours=1)),
            start)


def _arq_of(cloud, arq, headers):
    _, shown = cloud.call('GET', '%s/%s' % (ARQS, arq), headers=headers)
    return shown


@pytest.mark.parametrize('by', ['name', 'profile'])
def test_a_window_preempts_another_projects_binding(cloud, t4_profile, by):
    """Another project bound the device before the window: it is told
    ``notice_seconds`` before the start and unbound ``grace_seconds``
    after it; the lessee then binds the device."""
    clock = _Clock()
    notices = Recorder()
    periodic = _periodic(cloud, clock, notices)
    t4 = _t4(cloud)
    theirs = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
    assert theirs['state'] == states.BOUND, theirs
    start, end, starts_at = _soon()
    held = {'devices': [t4]} if by == 'name' else {
        'resource_class': 'PGPU', 'count': 1,
        'traits': {'CUSTOM_GPU_NVIDIA_T4': 'required'}}
    lease = _lease(cloud, headers=PREEMPTING, start=start, end=end,
                   **held)
    assert [d['uuid'] for d in lease['devices']] == [t4]
    # Before the notice period: nothing.
    periodic.run()
    clock.now = starts_at - datetime.timedelta(minutes=16)
    periodic.run()
    assert notices.sent == []
    assert _arq_of(cloud, theirs['uuid'], OTHER)['lease_starts_at'] is None
    # Ten minutes before the start (notice: 15 minutes).
    clock.now = starts_at - datetime.timedelta(minutes=10)
    periodic.run()
    [(event, payload)] = notices.sent
    assert event == 'accelerator.lease.starting'
    assert payload['lease_uuid'] == lease['uuid']
    assert payload['project_id'] == 'other'
    assert payload['starts_at'] == start + '+00:00'
    assert payload['devices'] == [t4]
    assert payload['arqs'] == [{'uuid': theirs['uuid'],
                                'instance_uuid': theirs['instance_uuid'],
                                'device_uuid': t4}]
    told = _arq_of(cloud, theirs['uuid'], OTHER)
    assert told['state'] == states.BOUND
    assert told['lease_starts_at'] == start + '+00:00'
    assert told['lease_ends_at'] is None
    periodic.run()
    assert len(notices.sent) == 1
    # Within the grace (5 minutes) after the start: still bound.
    clock.now = starts_at + datetime.timedelta(minutes=4)
    periodic.run()
    assert _arq_of(cloud, theirs['uuid'], OTHER)['state'] == states.BOUND
    clock.now = starts_at + datetime.timedelta(minutes=6)
    periodic.run()
    preempted = _arq_of(cloud, theirs['uuid'], OTHER)
    assert preempted['state'] == states.UNBOUND
    assert 'another project' in preempted['state_reason']
    assert preempted['lease_starts_at'] is None
    assert len(notices.sent) == 1
    # The device is free: the lessee binds it.
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 2)
    assert mine['state'] == states.BOUND, mine
    assert mine['device_rp_uuid'] == theirs['device_rp_uuid']
    # Later runs in the window leave the lessee alone.
    clock.now = starts_at + datetime.timedelta(minutes=30)
    periodic.run()
    assert _arq_of(cloud, mine['uuid'], LESSEE)['state'] == states.BOUND
    assert len(notices.sent) == 1


def test_the_lessees_own_binding_is_not_preempted(cloud, t4_profile):
    clock = _Clock()
    notices = Recorder()
    periodic = _periodic(cloud, clock, notices)
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 1)
    start, end, starts_at = _soon()
    _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    for minutes in (-10, 6, 30):
        clock.now = starts_at + datetime.timedelta(minutes=minutes)
        periodic.run()
    shown = _arq_of(cloud, mine['uuid'], LESSEE)
    assert shown['state'] == states.BOUND
    assert shown['lease_starts_at'] is None
    assert notices.sent == []


def test_a_binding_outside_every_window_is_left_alone(cloud, t4_profile):
    """A window ended, or a lease given back before its window: the
    other project keeps the device, and a notice given is withdrawn."""
    clock = _Clock()
    notices = Recorder()
    periodic = _periodic(cloud, clock, notices)
    theirs = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
    start, end, starts_at = _soon()
    lease = _lease(cloud, headers=PREEMPTING, devices=[_t4(cloud)],
                   start=start, end=end)
    clock.now = starts_at - datetime.timedelta(minutes=10)
    periodic.run()
    assert [e for e, _ in notices.sent] == ['accelerator.lease.starting']
    status, _ = cloud.call('POST', '%s/%s/give_back' % (PATH, lease['uuid']),
                           headers=LESSEE)
    assert status == 200
    shown = _arq_of(cloud, theirs['uuid'], OTHER)
    assert shown['lease_starts_at'] is None
    for minutes in (6, 120):
        clock.now = starts_at + datetime.timedelta(minutes=minutes)
        periodic.run()
    assert _arq_of(cloud, theirs['uuid'], OTHER)['state'] == states.BOUND
    # A window run through by nobody: the first run after its end does
    # not preempt a binding the window no longer needs.
    start, end, starts_at = _soon(hours=5)
    _lease(cloud, headers=PREEMPTING, devices=[_t4(cloud)], start=start,
           end=end)
    clock.now = starts_at + datetime.timedelta(hours=2)
    periodic.run()
    assert _arq_of(cloud, theirs['uuid'], OTHER)['state'] == states.BOUND
    assert [e for e, _ in notices.sent] == ['accelerator.lease.starting',
                                            'accelerator.lease.ended']


def test_a_restarted_conductor_preempts_once_without_a_second_notice(
        cloud, t4_profile):
    """The notice is recorded on the ARQ: a new conductor (a restart)
    gives none again, and unbinds at the start plus the grace."""
    clock = _Clock()
    first_notices = Recorder()
    theirs = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
    start, end, starts_at = _soon()
    _lease(cloud, headers=PREEMPTING, devices=[_t4(cloud)], start=start,
           end=end)
    clock.now = starts_at - datetime.timedelta(minutes=1)
    _periodic(cloud, clock, first_notices).run()
    assert [e for e, _ in first_notices.sent] == [
        'accelerator.lease.starting']
    later_notices = Recorder()
    restarted = _periodic(cloud, clock, later_notices)
    restarted.run()
    clock.now = starts_at + datetime.timedelta(minutes=6)
    restarted.run()
    restarted.run()
    assert _arq_of(cloud, theirs['uuid'], OTHER)['state'] == \
        states.UNBOUND
    assert later_notices.sent == []


def test_a_missed_notice_is_given_as_the_binding_is_preempted(
        cloud, t4_profile):
    """No conductor ran during the notice period nor the grace: the first
    run after them tells the holder, then unbinds it, at once."""
    clock = _Clock()
    notices = Recorder()
    theirs = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
    start, end, starts_at = _soon()
    _lease(cloud, headers=PREEMPTING, devices=[_t4(cloud)], start=start,
           end=end)
    clock.now = starts_at + datetime.timedelta(minutes=20)
    _periodic(cloud, clock, notices).run()
    assert [e for e, _ in notices.sent] == ['accelerator.lease.starting']
    assert _arq_of(cloud, theirs['uuid'], OTHER)['state'] == \
        states.UNBOUND


def _preempted_nova_instance(cloud, nova, clock):
    """Another project's VM Nova bound to the T4, a lease of it by the
    lessor, and the periodic run past the start plus the grace: (ARQ,
    instance, the periodic, the lease)."""
    t4 = _t4(cloud)
    arq = _arq(cloud, OTHER)
    instance = '1ea5e000-0000-4000-8000-000000000009'
    assert _nova_bind(cloud, arq, t4, instance)['state'] == states.BOUND
    cloud.wait_for(lambda: len(nova.calls) == 1)
    start, end, starts_at = _soon()
    lease = _lease(cloud, headers=PREEMPTING, devices=[t4], start=start,
                   end=end)
    clock.now = starts_at + datetime.timedelta(minutes=10)
    periodic = _periodic(cloud, clock)
    periodic.run()
    return arq, instance, periodic, lease


def _lessee_refused_then_bound(cloud, arq, instance, release):
    """The lessee cannot bind the T4 while the instance holds it; once
    Nova released it (``release()``), it can."""
    refused = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 2)
    assert refused['state'] == states.BIND_FAILED, refused
    assert _arq_of(cloud, arq, None)['state'] == states.BOUND
    release()
    mine = _schedule(cloud, _arq(cloud, LESSEE), LESSEE, 3)
    assert mine['state'] == states.BOUND, mine
    assert mine['device_rp_uuid'] == _rp_of(cloud, _t4(cloud))


def test_a_preempted_nova_instance_is_shelved_and_offloaded_by_nova(
        nova_cloud):
    """Another project's VM Nova bound to the device before the window:
    at the start plus the grace Nova is asked to shelve it, then to
    offload it once shelved; the binding is never undone behind Nova's
    back (no failed event for a running instance), and the lessee gets
    the device only once Nova released the ARQ (deleted it, as Nova does
    when it offloads an instance)."""
    cloud, nova = nova_cloud
    clock = _Clock()
    arq, instance, periodic, _ = _preempted_nova_instance(cloud, nova,
                                                          clock)
    assert nova.actions == [(instance, 'shelve')]
    periodic.run()
    assert nova.actions == [(instance, 'shelve'),
                            (instance, 'shelveOffload')]
    periodic.run()      # offloaded: nothing more to ask
    assert len(nova.actions) == 2

    def nova_offloads():
        status, _ = cloud.call('DELETE', '%s?instance=%s' % (ARQS, instance))
        assert status == 204

    _lessee_refused_then_bound(cloud, arq, instance, nova_offloads)
    assert _nova_events(nova) == [(arq, instance, 'completed')]


def test_a_revoked_lease_asks_nova_nothing_more(nova_cloud):
    """The lessor revokes the lease after Nova was asked to shelve the
    instance: the ask is withdrawn, so Nova is not asked to offload it
    and the instance keeps its device."""
    cloud, nova = nova_cloud
    clock = _Clock()
    arq, instance, periodic, lease = _preempted_nova_instance(cloud, nova,
                                                              clock)
    assert nova.actions == [(instance, 'shelve')]
    status, _ = cloud.call('DELETE', '%s/%s' % (PATH, lease['uuid']))
    assert status == 200
    periodic.run()
    assert nova.actions == [(instance, 'shelve')]
    kept = _arq_of(cloud, arq, None)
    assert (kept['state'], kept['lease_starts_at']) == (states.BOUND, None)


def test_with_notify_a_preempted_nova_instance_keeps_the_device():
    """[leases] preemption_action = notify: Nova is asked nothing, the
    instance keeps the device, and the lease waits until Nova releases
    it (here an unbind, as Nova's when the instance is deleted)."""
    with _with_nova('notify') as (cloud, nova):
        clock = _Clock()
        arq, instance, periodic, _ = _preempted_nova_instance(
            cloud, nova, clock)
        clock.now += datetime.timedelta(minutes=30)
        periodic.run()
        assert nova.actions == []

        def nova_unbinds():
            status, _ = cloud.call('PATCH', ARQS, {arq: [
                {'op': 'remove', 'path': '/hostname'},
                {'op': 'remove', 'path': '/device_rp_uuid'},
                {'op': 'remove', 'path': '/instance_uuid'}]})
            assert status == 202

        _lessee_refused_then_bound(cloud, arq, instance, nova_unbinds)
        assert _nova_events(nova) == [(arq, instance, 'completed')]


# Tenant safety (issue 27): preemption is the operator's decision, errors
# name nothing of another project, a project's leases are bounded.

def test_a_members_lease_takes_no_device_another_project_holds(
        cloud, t4_profile):
    """Another project's VM holds the T4: a member's lease of it is
    refused (409, naming nothing of theirs), a lease by profile takes
    a free device instead, and only an admin's lease (cyborg:lease:
    preempt) takes the T4 from them."""
    t4 = _t4(cloud)
    theirs = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
    assert theirs['state'] == states.BOUND, theirs
    status, body = cloud.call('POST', PATH, dict(
        devices=[t4], timezone='UTC', **_later()), headers=LESSEE)
    assert status == 409, body
    assert '0 of the 1 device(s) asked are free' in body['error_message']
    for theirs_id in (theirs['uuid'], theirs['instance_uuid'], 'other'):
        assert theirs_id not in body['error_message']
    # By profile: any free GPU (the A100), never the T4.
    taken = _lease(cloud, resource_class='PGPU', count=1, **_later())
    assert [d['uuid'] for d in taken['devices']] != [t4]
    status, body = cloud.call('POST', PATH, dict(
        resource_class='PGPU', count=1, timezone='UTC',
        traits={'CUSTOM_GPU_NVIDIA_T4': 'required'}, **_later(days=4)),
        headers=LESSEE)
    assert status == 409 and '0 of the 1 device' in body['error_message']
    # Nova's service role may not lease at all; an admin's lease
    # preempts.
    status, body = cloud.call('POST', PATH, dict(
        devices=[t4], timezone='UTC', **_later(days=5)),
        headers={'X-Project-Id': 'ops', 'X-Roles': 'service'})
    assert status == 403, body
    granted = _lease(cloud, headers=PREEMPTING, devices=[t4], **_later())
    assert [d['uuid'] for d in granted['devices']] == [t4]


def test_the_lessor_is_told_which_workload_holds_a_device(tmp_path):
    """With cyborg:lease:preempt denied to admins too (a policy file), an
    admin's lease of a held device is refused naming the holder: the
    lessor sees every project."""
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"cyborg:lease:preempt": "!"\n')
    api_policy.reset()      # the enforcer reads the file when made
    cloud = cloud_module.Cloud(overrides={
        ('oslo_policy', 'policy_file'): str(policy_file)}).start()
    try:
        status, _ = cloud.call('POST', '/v2/device_profiles',
                               {'name': 't4', 'groups': [T4_PROFILE]})
        assert status == 201
        theirs = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
        status, body = cloud.call('POST', PATH, dict(
            devices=[_t4(cloud)], timezone='UTC', **_later()),
            headers=PREEMPTING)
    finally:
        cloud.stop()
        api_policy.reset()
    assert status == 409, body
    assert theirs['uuid'] in body['error_message']
    assert theirs['instance_uuid'] in body['error_message']
    assert 'cyborg:lease:preempt' in body['error_message']


def test_a_member_never_sees_another_projects_ids_in_errors(
        cloud, t4_profile):
    """Every error another project's objects cause a member: a lease's
    conflicts, a binding refused in their window, their lease and ARQ
    asked for by uuid."""
    t4 = _t4(cloud)
    bound = _schedule(cloud, _arq(cloud, OTHER), OTHER, 1)
    start, end = _now_window()
    a100 = next(d['uuid'] for d in cloud.list_devices()
                if d['model'] == 'A100')
    their_lease = _lease(cloud, headers=OTHER, devices=[a100], start=start,
                         end=end)
    secret = {bound['uuid'], bound['instance_uuid'], their_lease['uuid'],
              'other'}
    # (status, body, the ids the request itself named: echoed, they
    # reveal nothing).
    answers = [
        cloud.call('POST', PATH, dict(devices=[t4], timezone='UTC',
                                      **_later()), headers=LESSEE) + ((),),
        cloud.call('POST', PATH, {'devices': [a100], 'timezone': 'UTC',
                                  'start': start, 'end': end},
                   headers=LESSEE) + ((),),
        cloud.call('POST', PATH, {'resource_class': 'PGPU', 'count': 2,
                                  'timezone': 'UTC', 'start': start,
                                  'end': end}, headers=LESSEE) + ((),),
    ]
    for method, path in (('GET', PATH), ('POST', PATH), ('GET', ARQS)):
        named = their_lease['uuid'] if path == PATH else bound['uuid']
        url = '%s/%s' % (path, named) + (
            '/give_back' if method == 'POST' else '')
        answers.append(cloud.call(method, url, headers=LESSEE) + ((named,),))
    # A binding of the member's refused inside their window.
    mine = _arq(cloud, LESSEE)
    refused = _nova_bind(cloud, mine, a100,
                         '1ea5e000-0000-4000-8000-000000000007')
    assert refused['state'] == states.BIND_FAILED
    answers.append((200, _arq_of(cloud, mine, LESSEE), ()))
    assert [a[0] for a in answers] == [409, 409, 409, 404, 404, 404, 200], \
        answers
    for _, body, named in answers:
        shown = str(body)
        assert not [s for s in secret - set(named) if s in shown], (
            shown, secret)


def _limited(**limits):
    return cloud_module.Cloud(overrides={
        ('leases', 'project_max_' + what): value
        for what, value in limits.items()}).start()


def test_a_project_leases_no_more_devices_than_its_limit():
    cloud = _limited(devices=1)
    try:
        first = _lease(cloud, devices=[_t4(cloud)], **_later())
        status, body = cloud.call('POST', PATH, dict(
            resource_class='PGPU', count=1, timezone='UTC',
            **_later(days=3)), headers=LESSEE)
        assert status == 403, body
        assert 'accel.lease.limit_exceeded' in body['error_message']
        assert 'limit 1, held by the active leases of the project 1, ' \
            'requested 1' in body['error_message']
        # Another project has a limit of its own.
        _lease(cloud, headers=OTHER, resource_class='PGPU', count=1,
               **_later(days=3))
        # Given back, the lease no longer counts.
        status, _ = cloud.call(
            'POST', '%s/%s/give_back' % (PATH, first['uuid']),
            headers=LESSEE)
        assert status == 200
        _lease(cloud, resource_class='PGPU', count=1, **_later(days=4))
    finally:
        cloud.stop()


def test_a_project_leases_no_more_device_hours_than_its_limit():
    """Device-hours within the horizon: a lease of one device for 10
    hours holds 10 of a limit of 12."""
    cloud = _limited(device_hours=12)
    try:
        _lease(cloud, devices=[_t4(cloud)], **_later(hours=10))
        status, body = cloud.call('POST', PATH, dict(
            resource_class='PGPU', count=1, timezone='UTC',
            **_later(days=3, hours=3)), headers=LESSEE)
        assert status == 403, body
        assert 'device_hours: limit 12, held by the active leases of the ' \
            'project 10.0, requested 3.0' in body['error_message']
        # Two hours more fit.
        _lease(cloud, resource_class='PGPU', count=1,
               **_later(days=3, hours=2))
    finally:
        cloud.stop()
