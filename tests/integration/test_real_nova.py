"""The real Nova 34 with cyborg_like: the flows Nova supports with
accelerators, each against one deployment of the module
(tests/integration/nova.py: Nova's API, conductor, scheduler and two
nova-compute with the fake virt driver; cyborg_like's API, conductor and
one agent per compute host; the real Placement, Keystone and Glance).

A flavor's ``accel:device_profile`` makes Nova's conductor create and
bind the ARQs through our API and nova-compute wait for
``accelerator-request-bound``; what the fake driver's bitstreams take
(``SLEEP``, ``FAIL``) makes a bind finish or fail late. After every flow
:func:`nova.assert_consistent` checks that the ARQs, the handles in use and
our providers' Placement allocations agree with the servers that exist.

The tests run in any order: each boots its own servers and deletes them,
and the one that stops a compute host starts it again.
"""

import datetime
import re
import sys
import time
import uuid

import pytest

from cyborg_like.drivers.nvidia_gpu import vgpu

from . import nova as nova_module
from .infra import utcnow

pytestmark = [pytest.mark.integration, pytest.mark.long,
              pytest.mark.timeout(900)]

SLOW_SECONDS = 8
BITSTREAMS = {
    'bs-slow': 'SLEEP %d\n' % SLOW_SECONDS,
    'bs-fail': 'SLEEP %d\nFAIL bitstream rejected by the card\n'
               % SLOW_SECONDS,
}
FPGA = {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'}
PROFILES = {
    'fpga': [FPGA],
    'gpu': [{'resources:PGPU': '1'}],
    'fpga-slow': [dict(FPGA, **{'accel:bitstream_id': 'bs-slow'})],
    'fpga-fail': [dict(FPGA, **{'accel:bitstream_id': 'bs-fail'})],
    'fpga-and-gpu': [FPGA, {'resources:PGPU': '1'}],
    'vgpu': [{'resources:VGPU': '1',
              'trait:%s' % nova_module.VGPU_TRAIT: 'required'}],
}


@pytest.fixture(scope='module')
def cloud(keystone_cloud, glance_cloud, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('real-nova'))
    started = time.monotonic()
    with nova_module.nova_cloud(workdir, keystone_cloud, glance_cloud,
                                BITSTREAMS) as cloud:
        print('Nova and cyborg_like up in %.0fs'
              % (time.monotonic() - started))
        token = keystone_cloud.token('admin')
        cloud.flavors = {}
        for name, groups in PROFILES.items():
            resp = cloud.dep.request('POST', '/v2/device_profiles', token,
                                     json={'name': name, 'groups': groups})
            assert resp.status_code == 201, resp.text
            cloud.flavors[name] = _flavor(cloud.nova, name)
        yield cloud


@pytest.fixture(autouse=True)
def _after_a_failure(request, cloud):
    """When the test failed: every Nova and cyborg_like log tail on stderr
    (shown in the report), and the servers it left deleted, so that the
    next tests' consistency checks judge their own flows, not its leftovers.
    """
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed > failed:
        for name, text in cloud.logs().items():
            sys.stderr.write('----- %s\n%s\n' % (name, text))
        for server in cloud.nova.servers():
            cloud.nova.request('DELETE', '/servers/%s' % server['id'])
        for server in cloud.nova.servers():
            cloud.nova.wait_gone(server['id'])


def _flavor(nova, profile):
    flavor = nova.request('POST', '/flavors', {'flavor': {
        'name': 'accel-' + profile, 'ram': 64, 'vcpus': 1, 'disk': 1}},
        expected=200).json()['flavor']['id']
    nova.request('POST', '/flavors/%s/os-extra_specs' % flavor, {
        'extra_specs': {'accel:device_profile': profile}}, expected=200)
    return flavor


def _boot(cloud, profile, statuses=('ACTIVE',), user='admin'):
    server = cloud.nova.request('POST', '/servers', {'server': {
        'name': 'it-%s-%s' % (profile, uuid.uuid4().hex[:6]),
        'imageRef': cloud.image, 'flavorRef': cloud.flavors[profile],
        'networks': 'none'}}, expected=202, user=user).json()['server']['id']
    return cloud.nova.wait_server(server, statuses)


def _delete(cloud, server):
    cloud.nova.request('DELETE', '/servers/%s' % server['id'],
                       expected=204)
    cloud.nova.wait_gone(server['id'])
    assert nova_module.assert_consistent(cloud) == {}
    assert cloud.placement.get(
        '/allocations/%s' % server['id'])['allocations'] == {}


def _arqs(cloud, server, count):
    """The server's ARQs, after checking everything agrees."""
    found = nova_module.assert_consistent(cloud, {server['id']: count})
    return sorted(a['uuid'] for a in found[server['id']])


def _event_taken(cloud, arq, server, status):
    """Whether our conductor told Nova that ``arq`` of ``server`` ended
    with ``status`` and Nova took the event (200: an instance it knows;
    404 would be an event dropped for an instance it cannot see)."""
    line = ('Told Nova that ARQ %s of instance %s %s (event '
            'accelerator-request-bound, answered 200)' % (arq, server, status))
    return line in cloud.dep.services['conductor'].read_log()


def test_boot_and_delete_with_one_device_profile(cloud):
    for profile in ('fpga', 'gpu'):
        server = _boot(cloud, profile)
        [arq] = nova_module.assert_consistent(
            cloud, {server['id']: 1})[server['id']]
        assert arq['state'] == 'Bound'
        assert arq['hostname'] == server['OS-EXT-SRV-ATTR:host']
        assert arq['hostname'] in cloud.hosts
        _delete(cloud, server)
    # Nova asked the Neutron stand-in only what it answers.
    assert any(path.startswith('/v2.0/ports')
               for _, path in cloud.neutron.requests)
    assert cloud.neutron.unknown == []


def test_late_bind_waits_for_our_event(cloud):
    """Programming takes SLOW_SECONDS: nova-compute is waiting for the
    bind when it ends, so the server is ACTIVE only because we told Nova
    (with no event it would fail after arq_binding_timeout)."""
    started = time.monotonic()
    server = _boot(cloud, 'fpga-slow')
    assert time.monotonic() - started >= SLOW_SECONDS
    [arq] = _arqs(cloud, server, 1)
    assert _event_taken(cloud, arq, server['id'], 'completed')
    _delete(cloud, server)


def test_late_bind_failure_fails_the_server_and_leaks_nothing(cloud):
    """The bind fails after SLOW_SECONDS: our failed event ends Nova's
    wait (not its arq_binding_timeout), Nova deletes the ARQs."""
    conductor = cloud.dep.services['conductor']
    offset = conductor.log_size()
    server = _boot(cloud, 'fpga-fail', statuses=('ERROR',))
    assert 'ccelerator' in server['fault']['message'], server['fault']
    [arq] = re.findall(r'ARQ (\S+) of instance %s failed \(event '
                       r'accelerator-request-bound, answered 200\)'
                       % server['id'], conductor.read_log(offset))
    assert nova_module.assert_consistent(cloud) == {}
    _delete(cloud, server)


def test_two_device_profile_groups(cloud):
    server = _boot(cloud, 'fpga-and-gpu')
    arqs = nova_module.assert_consistent(cloud, {server['id']: 2})
    assert {a['hostname'] for a in arqs[server['id']]} == {
        server['OS-EXT-SRV-ATTR:host']}
    _delete(cloud, server)


def test_boot_and_delete_with_a_vgpu(cloud):
    """A vGPU is bound as an MDEV handle: the ARQ Nova reads carries the
    mdev as the nvidia_gpu driver gives it (Nova's fake virt driver
    attaches nothing; docs/nova.md says what its libvirt driver does)."""
    server = _boot(cloud, 'vgpu')
    [arq] = nova_module.assert_consistent(
        cloud, {server['id']: 1})[server['id']]
    resp = cloud.dep.request(
        'GET', '/v2/accelerator_requests/%s' % arq['uuid'],
        cloud.dep.keystone.token('admin'))
    assert resp.status_code == 200, resp.text
    shown = resp.json()
    assert (shown['state'], shown['attach_handle_type']) == (
        'Bound', 'MDEV'), shown
    offered = nova_module.VGPU_TYPE
    assert shown['attach_handle_info'] in [
        vgpu.mdev_handle(nova_module.VGPU_GPU_UUID,
                         nova_module.VGPU_GPU['pci_address'],
                         offered['type'], n, 'vfio-pci').attach_info
        for n in range(offered['instances'])], shown
    # What Nova's libvirt driver makes the mdev from: its uuid is the
    # ARQ's attach_handle_uuid, its parent the GPU the PCI fields name.
    info = shown['attach_handle_info']
    assert shown['attach_handle_uuid'] == info['uuid']
    assert '%(domain)s:%(bus)s:%(device)s.%(function)s' % info == \
        nova_module.VGPU_GPU['pci_address']
    assert shown['hostname'] == server['OS-EXT-SRV-ATTR:host']
    _delete(cloud, server)


def test_reboot_and_rebuild_keep_the_arqs(cloud):
    server = _boot(cloud, 'fpga')
    arqs = _arqs(cloud, server, 1)
    for body in ({'reboot': {'type': 'SOFT'}}, {'reboot': {'type': 'HARD'}},
                 {'rebuild': {'imageRef': cloud.image}}):
        cloud.nova.action(server['id'], body)
        server = cloud.nova.wait_server(server['id'], ('ACTIVE',))
        assert _arqs(cloud, server, 1) == arqs, body
    _delete(cloud, server)


def test_shelve_offload_unshelve_gives_new_arqs(cloud):
    server = _boot(cloud, 'fpga')
    before = _arqs(cloud, server, 1)
    cloud.nova.action(server['id'], {'shelve': None})
    server = cloud.nova.wait_server(server['id'], ('SHELVED',
                                                   'SHELVED_OFFLOADED'))
    if server['status'] == 'SHELVED':
        assert _arqs(cloud, server, 1) == before
        cloud.nova.action(server['id'], {'shelveOffload': None})
        server = cloud.nova.wait_server(server['id'],
                                        ('SHELVED_OFFLOADED',))
    assert nova_module.assert_consistent(cloud, {server['id']: 0}) == {}
    cloud.nova.action(server['id'], {'unshelve': None})
    server = cloud.nova.wait_server(server['id'], ('ACTIVE',))
    after = _arqs(cloud, server, 1)
    assert set(after).isdisjoint(before)
    _delete(cloud, server)


def test_evacuate_to_the_other_host(cloud):
    server = _boot(cloud, 'fpga')
    before = _arqs(cloud, server, 1)
    source = server['OS-EXT-SRV-ATTR:host']
    [target] = [h for h in cloud.hosts if h != source]
    cloud.nova.fence(source)
    try:
        cloud.nova.action(server['id'], {'evacuate': {}}, expected=200)
        migration = cloud.nova.wait_migration(server['id'], 'evacuation')
        assert migration['status'] == 'done', (
            migration, cloud.nova.last_action(server['id']))
        server = cloud.nova.wait_server(server['id'], ('ACTIVE',))
        assert server['OS-EXT-SRV-ATTR:host'] == target
        after = _arqs(cloud, server, 1)
        assert set(after).isdisjoint(before)
    finally:
        cloud.nova.unfence(source)
    _delete(cloud, server)


@pytest.mark.parametrize('body', [
    {'resize': {'flavorRef': 'accel-gpu'}},
    {'migrate': None},
    {'os-migrateLive': {'host': None, 'block_migration': 'auto'}},
    {'suspend': None},
], ids=['resize', 'migrate', 'live-migrate', 'suspend'])
def test_operations_nova_refuses_with_accelerators(cloud, body):
    server = _boot(cloud, 'fpga')
    arqs = _arqs(cloud, server, 1)
    if 'resize' in body:
        body = {'resize': {'flavorRef': cloud.flavors['gpu']}}
    resp = cloud.nova.action(server['id'], body, expected=None)
    assert resp.status_code in (400, 403, 409), resp.text
    assert 'accelerators' in resp.text, resp.text
    server = cloud.nova.wait_server(server['id'], ('ACTIVE',))
    assert _arqs(cloud, server, 1) == arqs
    _delete(cloud, server)


def test_a_lease_gets_its_device_back_through_nova(cloud):
    """The cloud admin leases the GPU a p1 server holds, from a few seconds
    on (the admin may preempt): at the window's start plus the grace our
    conductor asks Nova ([nova] credentials, found in the catalog) to
    shelve the server and then offload it; Nova deletes its ARQ as it
    offloads it, which frees the device for the lessee."""
    server = _boot(cloud, 'gpu', user='p1-member')
    [arq] = nova_module.assert_consistent(
        cloud, {server['id']: 1})[server['id']]
    token = cloud.dep.keystone.token('admin')
    [gpu] = [d['uuid'] for d in cloud.dep.admin_get(
        '/v2/devices?hostname=%s' % arq['hostname'])['devices']
        if d['type'] == 'GPU'
        and d['model'] != nova_module.VGPU_GPU['model']]
    start = utcnow().replace(microsecond=0) + datetime.timedelta(seconds=3)
    resp = cloud.dep.request('POST', '/v2/leases', token, json={
        'devices': [gpu], 'timezone': 'UTC', 'start': start.isoformat(),
        'end': (start + datetime.timedelta(hours=2)).isoformat()})
    assert resp.status_code == 201, resp.text
    lease = resp.json()['uuid']
    try:
        server = cloud.nova.wait_server(server['id'],
                                        ('SHELVED_OFFLOADED',))
        assert nova_module.assert_consistent(
            cloud, {server['id']: 0}) == {}
        # Shelved by our conductor's [nova] user, not by its owner.
        shelvers = {a['user_id'] for a in cloud.nova.request(
            'GET', '/servers/%s/os-instance-actions' % server['id'],
            expected=200).json()['instanceActions']
            if a['action'] == 'shelve'}
        assert shelvers == {cloud.events_user_id}
    finally:
        resp = cloud.dep.request('DELETE', '/v2/leases/%s' % lease, token)
        assert resp.status_code == 200, resp.text
    _delete(cloud, server)
