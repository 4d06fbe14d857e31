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

import datetime
import zoneinfo

import pytest

from cyborg_like.common import context
from cyborg_like.common import states
from cyborg_like.conductor import leases as lease_lib
from cyborg_like.conf import CONF
from cyborg_like.db import hosts
from tests.functional import cloud as cloud_module
from tests.functional import test_nova_events

PATH = '/v2/leases'
ARQS = '/v2/accelerator_requests'
LESSEE = {'X-Project-Id': 'lessee', 'X-Roles': 'member,reader'}
OTHER = {'X-Project-Id': 'other', 'X-Roles': 'member,reader'}
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
def t4_profile(cloud):
    status, body = cloud.call('POST', '/v2/device_profiles',
                              {'name': 't4', 'groups': [T4_PROFILE]})
    assert status == 201, body


def test_an_overlapping_lease_is_refused_naming_the_holder(cloud):
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
    # Wednesday 23:00-01:00 meets a night: 409 naming the nights' lease.
    status, body = cloud.call('POST', PATH, {
        'devices': [t4], 'start': day(2, '23:00'),
        'end': day(3, '01:00'), 'timezone': 'Europe/Berlin'},
        headers=OTHER)
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
    # Nobody has three GPUs.
    status, body = cloud.call('POST', PATH, dict(
        resource_class='PGPU', count=3, timezone='UTC', **_later()),
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
    assert lease['uuid'] in refused['state_reason']
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


@pytest.fixture
def nova_cloud():
    """(cloud, Nova): a cloud telling a recording Nova of bindings'
    ends, with the T4 profile."""
    nova = test_nova_events.FakeNova()
    nova.thread.start()
    cloud = cloud_module.Cloud(overrides={
        ('nova', 'auth_type'): 'none',
        ('nova', 'endpoint_override'): 'http://127.0.0.1:%d'
        % nova.server_address[1]}).start()
    try:
        status, _ = cloud.call('POST', '/v2/device_profiles',
                               {'name': 't4', 'groups': [T4_PROFILE]})
        assert status == 201
        yield cloud, nova
    finally:
        cloud.stop()
        nova.shutdown()


def _nova_events(nova):
    """(tag, server, status) of every external event Nova was sent."""
    return [(e['tag'], e['server_uuid'], e['status'])
            for _, _, body in nova.calls for e in body['events']]


def test_nova_is_told_when_a_window_end_unbinds_its_instance(nova_cloud):
    """A lessee's ARQ Nova bound (an admin or Nova placing the lessee's
    VM by hand inside the window) is unbound at the end, and Nova hears
    it as it hears of any failed binding."""
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
    _, unbound = cloud.call('GET', '%s/%s' % (ARQS, arq))
    assert unbound['state'] == states.UNBOUND
    cloud.wait_for(lambda: len(nova.calls) == 2)
    assert _nova_events(nova) == [
        (arq, instance, 'completed'), (arq, instance, 'failed')]


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
    lease = _lease(cloud, start=start, end=end, **held)
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
    lease = _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
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
    _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
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
    _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
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
    _lease(cloud, devices=[_t4(cloud)], start=start, end=end)
    clock.now = starts_at + datetime.timedelta(minutes=20)
    _periodic(cloud, clock, notices).run()
    assert [e for e, _ in notices.sent] == ['accelerator.lease.starting']
    assert _arq_of(cloud, theirs['uuid'], OTHER)['state'] == \
        states.UNBOUND


def test_nova_is_told_when_a_window_start_preempts_its_instance(
        nova_cloud):
    """Another project's VM Nova bound to the device before the window
    loses it at the start plus the grace, and Nova hears it as it hears
    of any failed binding."""
    cloud, nova = nova_cloud
    clock = _Clock()
    t4 = _t4(cloud)
    arq = _arq(cloud, OTHER)
    instance = '1ea5e000-0000-4000-8000-000000000009'
    assert _nova_bind(cloud, arq, t4, instance)['state'] == \
        states.BOUND
    cloud.wait_for(lambda: len(nova.calls) == 1)
    start, end, starts_at = _soon()
    _lease(cloud, devices=[t4], start=start, end=end)
    clock.now = starts_at + datetime.timedelta(minutes=10)
    _periodic(cloud, clock).run()
    assert _arq_of(cloud, arq, None)['state'] == states.UNBOUND
    cloud.wait_for(lambda: len(nova.calls) == 2)
    assert _nova_events(nova) == [
        (arq, instance, 'completed'), (arq, instance, 'failed')]
