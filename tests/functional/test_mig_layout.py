"""MIG layouts through the API, the real conductor and agent (fake
driver) of tests/functional/cloud.py: the GPU is drained, cut into MIG
devices that become its deployables, and put back; refusals before any
agent call; a layout the GPU cannot take fails and leaves it drained."""

import json

import pytest
import yaml

from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests.functional import cloud as cloud_module
from tests.functional.test_firmware import _error
from tests.functional.test_firmware import finished

ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'admin-project'}
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p1'}
LATEST = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator latest'})
A100_80GB = {
    '1g.10gb': {'slices': 1, 'instances': 7},
    '2g.20gb': {'slices': 2, 'instances': 3},
    '3g.40gb': {'slices': 3, 'instances': 2},
    '4g.40gb': {'slices': 4, 'instances': 1},
    '7g.80gb': {'slices': 7, 'instances': 1},
}


@pytest.fixture
def cloud(tmp_path):
    with open(cloud_module.INVENTORY) as f:
        document = yaml.safe_load(f)
    [a100] = [d for d in document['devices'] if d.get('model') == 'A100']
    assert a100['mig_profiles'] == A100_80GB
    cloud = cloud_module.Cloud(
        overrides={('conductor', 'mig_layout_timeout'): 30}).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def gpu(cloud, model='A100'):
    [device] = [d for d in cloud.list_devices() if d['model'] == model]
    return device


def device(cloud, uuid):
    status, body = cloud.call('GET', '/v2/devices/%s' % uuid,
                              headers=LATEST)
    assert status == 200, body
    return body


def apply(cloud, uuid, layout, headers=LATEST):
    return cloud.call('POST', '/v2/devices/%s/mig_layout' % uuid,
                      {'layout': layout}, headers)


def operations_made():
    with db_api.reader() as session:
        return session.query(models.Operation).count()


def test_a_layout_is_applied_and_its_mig_devices_are_deployables(cloud):
    a100 = gpu(cloud)

    status, started = apply(cloud, a100['uuid'], ['3g.40gb', '4g.40gb'])

    assert status == 202, started
    assert started['device']['status'] == 'maintaining'
    assert started['operation']['type'] == 'mig_layout'
    done = finished(cloud, started['operation']['uuid'])
    assert done['state'] == 'succeeded', done
    assert done['result'] == {
        'layout': ['3g.40gb', '4g.40gb'], 'previous_status': 'enabled',
        'old': [], 'new': ['4g.40gb', '3g.40gb']}
    shown = device(cloud, a100['uuid'])
    assert shown['status'] == 'enabled'
    info = shown['vendor_board_info']
    if isinstance(info, str):
        info = json.loads(info)
    assert (info['mig_mode'], info['mig_layout']) == (
        'enabled', ['4g.40gb', '3g.40gb'])

    def migs():
        found = {}
        for deployable in cloud.call('GET', '/v2/deployables',
                                     headers=ADMIN)[1]['deployables']:
            pairs = json.loads(deployable['attributes_list'])
            rc = [v for pair in pairs for k, v in pair.items() if k == 'rc']
            if rc and rc[0].startswith('CUSTOM_MIG_'):
                found[rc[0]] = deployable['num_accelerators']
        return found
    assert cloud.wait_for(migs) == {'CUSTOM_MIG_4G_40GB': 1,
                                    'CUSTOM_MIG_3G_40GB': 1}

    # The whole GPU back.
    status, started = apply(cloud, a100['uuid'], [])
    assert status == 202, started
    done = finished(cloud, started['operation']['uuid'])
    assert (done['state'], done['result']['new']) == ('succeeded', [])
    assert cloud.wait_for(lambda: not migs())


def test_a_layout_the_gpu_cannot_take_fails_and_leaves_it_drained(cloud):
    a100 = gpu(cloud)

    status, started = apply(cloud, a100['uuid'], ['4g.40gb', '4g.40gb'])

    assert status == 202, started
    done = finished(cloud, started['operation']['uuid'])
    assert done['state'] == 'failed'
    assert 'needs 8 compute slices; the GPU has 7' in done['detail'], done
    assert device(cloud, a100['uuid'])['status'] == 'maintaining'


def test_refusals_before_any_agent_call(cloud):
    a100, t4 = gpu(cloud), gpu(cloud, 'T4')
    fpga = [d for d in cloud.list_devices() if d['type'] == 'FPGA'][0]
    unknown = '00000000-0000-4000-8000-000000000000'
    path = '/v2/devices/%s/mig_layout' % a100['uuid']
    cases = [
        (apply(cloud, t4['uuid'], ['1g.10gb']), 409, 'does not support MIG'),
        (apply(cloud, fpga['uuid'], []), 409, 'does not support MIG'),
        (apply(cloud, unknown, ['1g.10gb']), 404, unknown),
        (apply(cloud, a100['uuid'], ['1g.10gb'] * 8), 400, 'layout'),
        (apply(cloud, a100['uuid'], ['9g.80gb']), 400, 'layout'),
        (apply(cloud, a100['uuid'], ['1g.10gb\n']), 400, 'layout'),
        (apply(cloud, a100['uuid'], '1g.10gb'), 400, 'layout'),
        (cloud.call('POST', path, {}, ADMIN), 400, 'layout'),
        (cloud.call('POST', path, {'layout': [], 'force': True}, ADMIN),
         400, 'force'),
        (apply(cloud, a100['uuid'], ['1g.10gb'], MEMBER), 403,
         'mig_layout'),
    ]
    for result, status, text in cases:
        got_status, body = _error(result)
        assert (got_status, text in body) == (status, True), (text, body)
    # Nothing was drained and no operation was made.
    assert device(cloud, a100['uuid'])['status'] == 'enabled'
    assert operations_made() == 0


def test_a_gpu_with_a_bound_request_is_not_reshaped(cloud):
    a100 = gpu(cloud)
    assert cloud.call('POST', '/v2/device_profiles', [{
        'name': 'one-gpu', 'groups': [{'resources:PGPU': '1'}]}],
        ADMIN)[0] == 201
    status, created = cloud.call('POST', '/v2/accelerator_requests',
                                 {'device_profile_name': 'one-gpu'}, ADMIN)
    assert status == 201, created
    arq = created['arqs'][0]['uuid']
    [whole] = [d for d in cloud.call('GET', '/v2/deployables?name=gpu0',
                                     headers=ADMIN)[1]['deployables']
               if 'CUSTOM_GPU_NVIDIA_A100' in d['attributes_list']]
    instance = '11111111-2222-4333-8444-555555555555'
    assert cloud.call('PATCH', '/v2/accelerator_requests', {arq: [
        {'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': whole['rp_uuid']},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]},
        ADMIN)[0] == 202
    cloud.wait_for(lambda: cloud.call(
        'GET', '/v2/accelerator_requests/%s' % arq,
        headers=ADMIN)[1]['state'] == 'Bound')

    status, body = apply(cloud, a100['uuid'], ['7g.80gb'])

    assert status == 409 and 'unbind' in json.dumps(body), body
    assert device(cloud, a100['uuid'])['status'] == 'enabled'
    assert operations_made() == 0
