"""openstacksdk's accelerator proxy, configured as users configure it.

A clouds.yaml with ``auth_type: none`` and ``accelerator_endpoint_override``
pointing at the root of the service: the SDK discovers the v2 API from
GET / and follows the links there.
"""

import uuid

import openstack
from openstack import exceptions as sdk_exc
import pytest
import yaml

from tests.clients.service import HANDLES
from tests.clients.service import wait_for

CLOUD = 'cyborg-like-clients-test'

# The SDK's own internals warn about its future removals; not our concern.
pytestmark = pytest.mark.filterwarnings(
    'ignore::openstack.warnings._RemovedInSDKWarning')


@pytest.fixture(scope='module')
def clouds_yaml(cyborg, tmp_path_factory):
    path = tmp_path_factory.mktemp('sdk') / 'clouds.yaml'
    clouds = {'clouds': {
        CLOUD: {'auth_type': 'none',
                'accelerator_endpoint_override': cyborg.url + '/'},
        CLOUD + '-2.3': {'auth_type': 'none',
                         'accelerator_endpoint_override': cyborg.url + '/',
                         'accelerator_default_microversion': '2.3'},
        CLOUD + '-v2': {'auth_type': 'none',
                        'accelerator_endpoint_override': cyborg.url + '/v2'},
    }}
    path.write_text(yaml.safe_dump(clouds))
    return str(path)


def _connect(clouds_yaml, name):
    config = openstack.config.OpenStackConfig(config_files=[clouds_yaml],
                                              load_envvars=False)
    return openstack.connection.Connection(
        config=config.get_one(cloud=name))


@pytest.fixture(scope='module')
def conn(clouds_yaml):
    """No microversion asked for: the API's minimum, 2.0 (as Cyborg)."""
    connection = _connect(clouds_yaml, CLOUD)
    yield connection
    connection.close()


@pytest.fixture(scope='module')
def conn23(clouds_yaml):
    connection = _connect(clouds_yaml, CLOUD + '-2.3')
    yield connection
    connection.close()


def _name(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


def test_version_discovery_follows_the_root_document(conn, cyborg):
    data = conn.accelerator.get_endpoint_data()
    assert data.url == cyborg.url + '/v2/'
    assert data.api_version == (2, 0)
    assert data.min_microversion == (2, 0)
    assert data.max_microversion == (2, 4)
    assert conn.accelerator.get_endpoint() == cyborg.url + '/v2/'


def test_endpoint_override_may_name_v2_itself(clouds_yaml, cyborg):
    connection = _connect(clouds_yaml, CLOUD + '-v2')
    try:
        assert connection.accelerator.get_endpoint() == cyborg.url + '/v2/'
        devices = list(connection.accelerator.devices())
        assert sorted(d.type for d in devices) == ['FPGA', 'GPU']
    finally:
        connection.close()


def test_devices(conn, conn23, cyborg):
    devices = {d.type: d for d in conn.accelerator.devices()}
    assert sorted(devices) == ['FPGA', 'GPU']
    fpga = devices['FPGA']
    assert fpga.vendor == '0x8086'
    assert fpga.model == 'PAC N3000'
    assert fpga.hostname == cyborg.host
    # 2.0 has no status (it came with 2.3) ...
    assert fpga.status is None

    # ... 2.3 has.
    assert {d.type: d.status for d in conn23.accelerator.devices()} == {
        'FPGA': 'enabled', 'GPU': 'enabled'}
    shown = conn23.accelerator.get_device(fpga.uuid)
    assert shown.uuid == fpga.uuid
    assert shown.model == 'PAC N3000'
    assert shown.status == 'enabled'


def test_paginated_lists_follow_next_links(conn):
    # A full page carries a "next" link with a marker; the SDK follows it.
    paged = [d.name for d in conn.accelerator.deployables(limit=1)]
    assert sorted(paged) == ['gpu0', 'region0', 'region1']
    assert sorted(d.uuid for d in conn.accelerator.devices(limit=1)) == (
        sorted(d.uuid for d in conn.accelerator.devices()))


def test_unknown_device_raises_not_found_with_the_fault_string(conn):
    missing = str(uuid.uuid4())
    with pytest.raises(sdk_exc.NotFoundException) as failed:
        conn.accelerator.get_device(missing)
    assert failed.value.status_code == 404
    assert missing in failed.value.details


def test_deployables(conn):
    deployables = {d.name: d for d in conn.accelerator.deployables()}
    assert sorted(deployables) == ['gpu0', 'region0', 'region1']
    assert deployables['region0'].device_id == deployables['region1'].device_id
    assert deployables['gpu0'].device_id != deployables['region0'].device_id
    assert {n: d.num_accelerators for n, d in deployables.items()} == {
        'gpu0': 1, 'region0': 1, 'region1': 1}

    shown = conn.accelerator.get_deployable(deployables['region1'].id)
    assert shown.id == deployables['region1'].id
    assert shown.name == 'region1'
    assert shown.parent_id is None


def test_device_profiles(conn, conn23):
    acc = conn.accelerator
    name = _name('sdk-fpga')
    groups = [{'resources:FPGA': '1',
               'trait:CUSTOM_FPGA_INTEL_N3000': 'required',
               'accel:bitstream_id': 'bs-gzip-1'}]
    created = acc.create_device_profile(name=name, groups=groups,
                                        description='gzip offload')
    assert created.name == name
    assert created.groups == groups
    assert created.description == 'gzip offload'
    uuid.UUID(created.uuid)

    listed = {p.name: p for p in acc.device_profiles()}
    assert listed[name].uuid == created.uuid
    assert listed[name].groups == groups

    fetched = acc.get_device_profile(created.uuid)
    assert (fetched.uuid, fetched.name, fetched.groups) == (
        created.uuid, name, groups)
    # By name: 2.2 and later only.
    assert conn23.accelerator.get_device_profile(name).uuid == created.uuid
    with pytest.raises(sdk_exc.HttpException) as refused:
        acc.get_device_profile(name)
    assert refused.value.status_code == 406
    assert 'should be 2.2' in refused.value.details

    acc.delete_device_profile(created.uuid, ignore_missing=False)
    assert name not in {p.name for p in acc.device_profiles()}
    with pytest.raises(sdk_exc.NotFoundException):
        acc.get_device_profile(created.uuid)
    with pytest.raises(sdk_exc.NotFoundException):
        acc.delete_device_profile(created.uuid, ignore_missing=False)
    assert acc.delete_device_profile(created.uuid) is None


def _wait_for_state(acc, arq_uuid, states):
    def fetched_in_states():
        arq = acc.get_accelerator_request(arq_uuid)
        return arq if arq.state in states else None

    return wait_for(fetched_in_states,
                    what='ARQ %s in %s' % (arq_uuid, states))


def test_accelerator_requests(conn, cyborg):
    acc = conn.accelerator
    profile = _name('sdk-gpu')
    acc.create_device_profile(name=profile,
                              groups=[{'resources:PGPU': '1'}])

    arq = acc.create_accelerator_request(device_profile_name=profile)
    assert arq.state == 'Initial'
    assert arq.device_profile_name == profile
    assert arq.device_profile_group_id == 0
    assert arq.instance_uuid is None
    uuid.UUID(arq.uuid)

    listed = {a.uuid: a for a in acc.accelerator_requests()}
    assert listed[arq.uuid].state == 'Initial'
    assert acc.get_accelerator_request(arq.uuid).device_profile_name == (
        profile)

    # Bind: the SDK sends the bulk form {uuid: [ops]} to /<uuid>.
    instance = str(uuid.uuid4())
    rp_uuid = cyborg.rp_uuid('gpu0')
    acc.patch_accelerator_request(arq.uuid, [
        {'op': 'add', 'path': '/hostname', 'value': cyborg.host},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}])
    bound = _wait_for_state(acc, arq.uuid, ('Bound', 'BindFailed'))
    assert bound.state == 'Bound'
    assert bound.hostname == cyborg.host
    assert bound.device_rp_uuid == rp_uuid
    assert bound.instance_uuid == instance
    assert bound.attach_handle_type == 'PCI'
    assert bound.attach_handle_info == HANDLES['gpu0']

    # Binding a bound ARQ again is a conflict, with Cyborg's fault string.
    with pytest.raises(sdk_exc.ConflictException) as conflict:
        acc.patch_accelerator_request(arq.uuid, [
            {'op': 'add', 'path': '/hostname', 'value': cyborg.host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}])
    assert 'Bound' in conflict.value.details

    # Unbind through the older (deprecated) name of the same call.
    with pytest.warns(PendingDeprecationWarning, match='deprecated'):
        acc.update_accelerator_request(arq.uuid, [
            {'op': 'remove', 'path': '/hostname'},
            {'op': 'remove', 'path': '/device_rp_uuid'},
            {'op': 'remove', 'path': '/instance_uuid'}])
    unbound = acc.get_accelerator_request(arq.uuid)
    assert unbound.state == 'Unbound'
    assert unbound.instance_uuid is None
    assert unbound.attach_handle_info == {}

    acc.delete_accelerator_request(arq.uuid, ignore_missing=False)
    assert arq.uuid not in {a.uuid for a in acc.accelerator_requests()}
    with pytest.raises(sdk_exc.NotFoundException):
        acc.get_accelerator_request(arq.uuid)
    with pytest.raises(sdk_exc.NotFoundException):
        acc.delete_accelerator_request(arq.uuid, ignore_missing=False)
    assert acc.delete_accelerator_request(arq.uuid) is None
    acc.delete_device_profile(profile)


def test_a_profile_in_use_cannot_be_deleted(conn):
    acc = conn.accelerator
    profile = acc.create_device_profile(name=_name('sdk-busy'),
                                        groups=[{'resources:PGPU': '1'}])
    arq = acc.create_accelerator_request(device_profile_name=profile.name)
    with pytest.raises(sdk_exc.ConflictException) as conflict:
        acc.delete_device_profile(profile.uuid, ignore_missing=False)
    assert 'used by 1 accelerator request' in conflict.value.details
    assert acc.get_device_profile(profile.uuid).name == profile.name
    acc.delete_accelerator_request(arq.uuid, ignore_missing=False)
    acc.delete_device_profile(profile.uuid, ignore_missing=False)
    assert profile.name not in {p.name for p in acc.device_profiles()}
