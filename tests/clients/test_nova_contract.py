"""The calls Nova's Cyborg client (nova/accelerator/cyborg.py) makes.

Nova talks to Cyborg through a keystoneauth1 Adapter for the service type
``accelerator`` whose endpoint is the v2 root, with ``raise_exc=False``: it
takes any response that is not an error (status < 400) as success and reads
the JSON itself. It sends no ``OpenStack-API-Version`` header, so every
request is served at 2.0. Each test walks one of Nova's flows and asserts
on exactly what Nova parses from the answers.
"""

import re
import time
import uuid

from keystoneauth1 import adapter
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session
import pytest

from tests.clients.service import HANDLES

DEVICE_PROFILE_URL = '/device_profiles'
ARQ_URL = '/accelerator_requests'
# The extra-spec style keys Nova turns into Placement request groups;
# anything else (accel:...) is Cyborg's own and skipped by Nova.
GROUP_KEY = re.compile(r'^(resources|trait)([1-9][0-9]*)?:(.+)$')
RESOLVED = ('Bound', 'BindFailed', 'Deleting')


@pytest.fixture(scope='module')
def nova(cyborg):
    """Nova's adapter: no auth, endpoint from the catalog (the v2 root)."""
    sess = ks_session.Session(auth=noauth.NoAuth())
    client = adapter.Adapter(session=sess, service_type='accelerator',
                             endpoint_override=cyborg.url + '/v2',
                             raise_exc=False)
    yield client
    sess.session.close()


def _create_profile(nova, groups):
    name = 'nova-%s' % uuid.uuid4().hex[:8]
    resp = nova.post(DEVICE_PROFILE_URL,
                     json=[{'name': name, 'groups': groups}])
    assert resp.status_code == 201, resp.text
    return name


def request_groups(nova, dp_name):
    """Nova's get_device_profile_groups: the Placement request groups."""
    resp = nova.get(DEVICE_PROFILE_URL, params={'name': dp_name})
    assert resp, resp.text
    # Nova gets no microversion header: the API answers at 2.0.
    assert resp.headers['OpenStack-API-Version'] == 'accelerator 2.0'
    dp_list = resp.json().get('device_profiles')
    assert dp_list and len(dp_list) == 1, dp_list
    groups = []
    for index, dp_group in enumerate(dp_list[0]['groups']):
        group = {'requester_id': 'device_profile_%d' % index,
                 'resources': {}, 'traits': {}}
        for key, value in dp_group.items():
            match = GROUP_KEY.match(key)
            if not match:
                continue
            prefix, _suffix, name = match.groups()
            if prefix == 'resources':
                group['resources'][name] = int(value)
            else:
                group['traits'][name] = value
        groups.append(group)
    return groups


def create_arqs_and_match_rps(nova, dp_name, rg_rp_map):
    """Nova's create_arqs_and_match_resource_providers."""
    resp = nova.post(ARQ_URL, json={'device_profile_name': dp_name})
    assert resp, resp.text
    assert resp.status_code == 201
    arqs = resp.json().get('arqs')
    assert arqs
    for arq in arqs:
        requester_id = 'device_profile_%d' % arq['device_profile_group_id']
        arq['device_rp_uuid'] = rg_rp_map[requester_id][0]
    return arqs


def bind_arqs(nova, bindings):
    """Nova's bind_arqs: one bulk RFC 6902 patch for all ARQs."""
    patch_list = {
        arq_uuid: [{'path': '/' + field, 'op': 'add', 'value': value}
                   for field, value in binding.items()]
        for arq_uuid, binding in bindings.items()}
    return nova.patch(ARQ_URL, json=patch_list)


def get_arqs_for_instance(nova, instance_uuid, only_resolved=False):
    """Nova's get_arqs_for_instance."""
    resp = nova.get(ARQ_URL, params={'instance': instance_uuid})
    assert resp, resp.text
    arqs = resp.json().get('arqs')
    assert arqs, 'Cyborg returned no ARQs for instance %s' % instance_uuid
    if only_resolved:
        arqs = [a for a in arqs if a['state'] in RESOLVED]
    return arqs


def wait_until_resolved(nova, instance_uuid, timeout=30):
    """GET ?instance=&bind_state=resolved: 423 until every ARQ of the
    instance is resolved, then 200 with them."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        resp = nova.get(ARQ_URL, params={'instance': instance_uuid,
                                         'bind_state': 'resolved'})
        seen.append(resp.status_code)
        if resp.status_code == 200:
            assert set(seen[:-1]) <= {423}, seen
            return resp.json()['arqs']
        assert resp.status_code == 423, (resp.status_code, resp.text)
        assert time.monotonic() < deadline, 'still 423 after %ss' % timeout
        time.sleep(0.1)


def pci_address(arq):
    """What the libvirt driver builds from a PCI attach handle."""
    assert arq['attach_handle_type'] == 'PCI'
    info = arq['attach_handle_info']
    return '%s:%s:%s.%s' % (info['domain'], info['bus'], info['device'],
                            info['function'])


def test_boot_with_a_two_group_profile_then_delete_the_server(nova, cyborg):
    dp_name = _create_profile(nova, [
        {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL_N3000': 'required',
         'accel:bitstream_id': 'bs-gzip-1'},
        {'resources:PGPU': '1', 'trait:CUSTOM_GPU_NVIDIA_A100': 'required'},
    ])

    # API: the flavor's device profile becomes Placement request groups.
    groups = request_groups(nova, dp_name)
    assert groups == [
        {'requester_id': 'device_profile_0', 'resources': {'FPGA': 1},
         'traits': {'CUSTOM_FPGA_INTEL_N3000': 'required'}},
        {'requester_id': 'device_profile_1', 'resources': {'PGPU': 1},
         'traits': {'CUSTOM_GPU_NVIDIA_A100': 'required'}},
    ]

    # Conductor: Placement picked a provider per group; create the ARQs.
    rg_rp_map = {'device_profile_0': [cyborg.rp_uuid('region0')],
                 'device_profile_1': [cyborg.rp_uuid('gpu0')]}
    arqs = create_arqs_and_match_rps(nova, dp_name, rg_rp_map)
    assert sorted(a['device_profile_group_id'] for a in arqs) == [0, 1]
    assert {a['state'] for a in arqs} == {'Initial'}
    assert {a['device_profile_name'] for a in arqs} == {dp_name}

    # Bind them all to the instance on its host, in one PATCH.
    instance = str(uuid.uuid4())
    bindings = {a['uuid']: {'hostname': cyborg.host,
                            'device_rp_uuid': a['device_rp_uuid'],
                            'instance_uuid': instance} for a in arqs}
    resp = bind_arqs(nova, bindings)
    assert resp, resp.text
    assert resp.status_code == 202
    assert resp.content == b''

    # Compute: wait until Cyborg resolved them, then read the handles.
    resolved = wait_until_resolved(nova, instance)
    assert {a['uuid'] for a in resolved} == set(bindings)
    by_group = {a['device_profile_group_id']: a for a in
                get_arqs_for_instance(nova, instance, only_resolved=True)}
    assert sorted(by_group) == [0, 1]
    for group_id, deployable in ((0, 'region0'), (1, 'gpu0')):
        arq = by_group[group_id]
        assert arq['state'] == 'Bound'
        assert arq['hostname'] == cyborg.host
        assert arq['instance_uuid'] == instance
        assert arq['device_rp_uuid'] == rg_rp_map[
            'device_profile_%d' % group_id][0]
        assert arq['attach_handle_info'] == HANDLES[deployable]
    assert pci_address(by_group[0]) == '0000:5e:00.1'
    assert pci_address(by_group[1]) == '0000:af:00.0'
    assert cyborg.deployable('region0')['bitstream_id'] == 'bs-gzip-1'
    # get_arq_uuids_for_instance
    assert {a['uuid'] for a in get_arqs_for_instance(nova, instance)} == (
        set(bindings))

    # Server deleted: delete_arqs_for_instance, idempotent.
    resp = nova.delete(ARQ_URL, params={'instance': instance})
    assert resp, resp.text
    assert resp.status_code == 204
    assert resp.content == b''
    # The same kept-alive connection still works after the 204.
    resp = nova.get(ARQ_URL, params={'instance': instance})
    assert resp.status_code == 200
    assert resp.json() == {'arqs': []}
    resp = nova.delete(ARQ_URL, params={'instance': instance})
    assert resp.status_code == 204
    for arq_uuid in bindings:
        assert nova.get(ARQ_URL + '/' + arq_uuid).status_code == 404

    # The devices are free again: the next boot gets the same handles.
    arqs = create_arqs_and_match_rps(nova, dp_name, rg_rp_map)
    second = str(uuid.uuid4())
    resp = bind_arqs(nova, {a['uuid']: {
        'hostname': cyborg.host, 'device_rp_uuid': a['device_rp_uuid'],
        'instance_uuid': second} for a in arqs})
    assert resp.status_code == 202
    assert {a['state'] for a in wait_until_resolved(nova, second)} == {
        'Bound'}
    assert nova.delete(ARQ_URL, params={'instance': second})
    assert nova.delete(DEVICE_PROFILE_URL, params={'value': dp_name})


def test_failed_binding_is_resolved_and_cleaned_up_by_uuid(nova, cyborg):
    dp_name = _create_profile(nova, [
        {'resources:FPGA': '1', 'accel:bitstream_id': 'bs-refused'}])
    groups = request_groups(nova, dp_name)
    assert groups == [{'requester_id': 'device_profile_0',
                       'resources': {'FPGA': 1}, 'traits': {}}]
    arqs = create_arqs_and_match_rps(
        nova, dp_name, {'device_profile_0': [cyborg.rp_uuid('region1')]})
    assert len(arqs) == 1
    instance = str(uuid.uuid4())
    arq_uuids = [a['uuid'] for a in arqs]
    resp = bind_arqs(nova, {arq_uuids[0]: {
        'hostname': cyborg.host, 'device_rp_uuid': arqs[0]['device_rp_uuid'],
        'instance_uuid': instance}})
    assert resp.status_code == 202

    # A failed binding is resolved too; Nova sees BindFailed and gives up.
    (resolved,) = wait_until_resolved(nova, instance)
    assert resolved['state'] == 'BindFailed'
    assert resolved['attach_handle_info'] == {}
    assert cyborg.deployable('region1')['bitstream_id'] is None

    # delete_arqs_by_uuid cleans up; a second call is an error, which
    # Nova only logs.
    resp = nova.delete(ARQ_URL, params={'arqs': ','.join(arq_uuids)})
    assert resp.status_code == 204
    assert resp.content == b''
    resp = nova.delete(ARQ_URL, params={'arqs': ','.join(arq_uuids)})
    assert not resp
    assert resp.status_code == 404
    assert resp.json()['error_message']
    resp = nova.get(ARQ_URL, params={'instance': instance})
    assert resp.json() == {'arqs': []}
    assert nova.delete(DEVICE_PROFILE_URL, params={'value': dp_name})


def test_unknown_profile_is_an_error_nova_reports(nova):
    resp = nova.get(DEVICE_PROFILE_URL, params={'name': 'no-such-profile'})
    assert resp.status_code == 200
    assert resp.json().get('device_profiles') == []   # "got nothing"
    resp = nova.post(ARQ_URL, json={'device_profile_name': 'no-such-profile'})
    assert not resp
    assert resp.status_code == 404


def test_deleting_several_arqs_by_uuid(nova):
    dp_name = _create_profile(nova, [{'resources:PGPU': '1'},
                                     {'resources:FPGA': '1'}])
    arqs = create_arqs_and_match_rps(nova, dp_name, {
        'device_profile_0': ['unused'], 'device_profile_1': ['unused']})
    uuids = sorted(a['uuid'] for a in arqs)
    assert len(uuids) == 2
    resp = nova.delete(ARQ_URL, params={'arqs': ','.join(uuids)})
    assert resp.status_code == 204
    for arq_uuid in uuids:
        assert nova.get(ARQ_URL + '/' + arq_uuid).status_code == 404
    assert nova.delete(DEVICE_PROFILE_URL, params={'value': dp_name})
