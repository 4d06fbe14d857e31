"""Firmware operations on devices, through the API, the real conductor and
agent (fake driver) of tests/functional/cloud.py: drain, flash with a
catalog image the agent fetches over HTTP, re-discovery, versions
recorded, refusals before any agent call."""

import json

import pytest

from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests.functional import catalog_images
from tests.functional import cloud as cloud_module

ADMIN = catalog_images.ADMIN
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p1'}
NEW_INTERFACE = '5e2a8a63-1dfe-4f33-9c54-6c1d4f3c2b7a'
NEW_TRAIT = 'CUSTOM_FPGA_INTERFACE_' + \
    NEW_INTERFACE.replace('-', '').upper()
FIRMWARE_2 = '{"version": "2.0", "interface_id": "%s"}\n' % NEW_INTERFACE


@pytest.fixture
def cloud(tmp_path):
    # The agent fetches images from the API over HTTP, as on a host.
    cloud = cloud_module.catalog_cloud(tmp_path).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def device_of(cloud, type_='FPGA'):
    [device] = [d for d in cloud.list_devices() if d['type'] == type_]
    return device


def flash(cloud, device_uuid, image_uuid, headers=ADMIN):
    return cloud.call('POST', '/v2/devices/%s/firmware' % device_uuid,
                      {'image_uuid': image_uuid}, headers)


def finished(cloud, operation):
    def done():
        status, body = cloud.call('GET', '/v2/operations/%s' % operation,
                                  headers=ADMIN)
        assert status == 200, body
        return body if body['state'] in ('succeeded', 'failed') else None
    return cloud.wait_for(done, timeout=30)


def region_traits(cloud):
    status, body = cloud.call('GET', '/v2/deployables', headers=ADMIN)
    assert status == 200
    return {d['name']: sorted(v for pair in json.loads(d['attributes_list'])
                              for k, v in pair.items()
                              if k.startswith('trait'))
            for d in body['deployables'] if d['name'].startswith('region')}


def status_of(cloud, device_uuid):
    status, body = cloud.call('GET', '/v2/devices/%s' % device_uuid,
                              headers=dict(ADMIN, **{
                                  'OpenStack-API-Version':
                                  'accelerator latest'}))
    assert status == 200
    return body['status']


def test_flash_drains_flashes_rediscovers_and_restores(cloud):
    device = device_of(cloud)
    image = catalog_images.firmware(cloud, 'SLEEP 1\n' + FIRMWARE_2,
                                    board='0x0b30')

    status, started = flash(cloud, device['uuid'], image)

    assert status == 202, started
    operation = started['operation']
    assert (operation['type'], operation['target_uuid']) == (
        'firmware', device['uuid'])
    # Drained at once, before the agent is done.
    assert status_of(cloud, device['uuid']) == 'maintaining'
    done = finished(cloud, operation['uuid'])
    assert done['state'] == 'succeeded', done
    assert done['result']['image_uuid'] == image
    assert done['result']['previous_status'] == 'enabled'
    assert done['result']['old']['firmware_version'] is None
    assert done['result']['new'] == {
        'firmware_version': '2.0',
        'interface_ids': [NEW_INTERFACE.replace('-', '').upper()]}
    assert status_of(cloud, device['uuid']) == 'enabled'
    # The regions now offer the new shell's interface only.
    cloud.wait_for(lambda: all(
        NEW_TRAIT in traits and not any(
            t.startswith('CUSTOM_FPGA_INTERFACE_') and t != NEW_TRAIT
            for t in traits)
        for traits in region_traits(cloud).values()))


def test_a_failed_flash_leaves_the_device_drained_with_the_reason(cloud):
    device = device_of(cloud)
    image = catalog_images.firmware(
        cloud, 'FAIL Secure update failed: flash write error\n')
    status, started = flash(cloud, device['uuid'], image)
    assert status == 202, started
    done = finished(cloud, started['operation']['uuid'])
    assert (done['state'], done['detail']) == (
        'failed', 'Driver fake failed: Secure update failed: flash write '
                  'error')
    assert status_of(cloud, device['uuid']) == 'maintaining'


def test_a_disabled_device_stays_disabled_after_a_flash(cloud):
    device = device_of(cloud)
    assert cloud.call('POST', '/v2/devices/%s/disable' % device['uuid'],
                      headers=ADMIN)[0] == 200
    image = catalog_images.firmware(cloud, FIRMWARE_2)
    started = flash(cloud, device['uuid'], image)[1]
    assert finished(cloud, started['operation']['uuid'])['state'] == \
        'succeeded'
    assert status_of(cloud, device['uuid']) == 'maintaining'


def test_a_second_flash_waits_for_the_first(cloud):
    device = device_of(cloud)
    image = catalog_images.firmware(cloud, 'SLEEP 2\n' + FIRMWARE_2)
    first = flash(cloud, device['uuid'], image)
    assert first[0] == 202
    status, body = flash(cloud, device['uuid'], image)
    assert status == 409 and 'under way' in json.dumps(body), body
    finished(cloud, first[1]['operation']['uuid'])


def _error(status_body):
    status, body = status_body
    return status, json.dumps(body)


def test_refusals_before_any_agent_call(cloud):
    fpga, gpu = device_of(cloud), device_of(cloud, 'GPU')
    firmware = catalog_images.firmware(cloud, FIRMWARE_2)
    bitstream = catalog_images.upload(cloud, b'GBS region image\n',
                                      kind='bitstream', vendor='0x8086')
    xilinx = catalog_images.firmware(cloud, FIRMWARE_2, vendor='0x10ee')
    other_board = catalog_images.firmware(cloud, FIRMWARE_2, board='0x0b2b')
    unknown = '00000000-0000-4000-8000-000000000000'
    cases = [
        (flash(cloud, fpga['uuid'], bitstream), 409, 'not firmware'),
        (flash(cloud, fpga['uuid'], xilinx), 409, 'vendor 0x10ee'),
        (flash(cloud, fpga['uuid'], other_board), 409, 'board 0x0b2b'),
        (flash(cloud, gpu['uuid'], firmware), 409, 'only FPGA'),
        (flash(cloud, unknown, firmware), 404, unknown),
        (flash(cloud, fpga['uuid'], unknown), 404, unknown),
        (flash(cloud, fpga['uuid'], 'not-a-uuid'), 400, 'image_uuid'),
        (cloud.call('POST', '/v2/devices/%s/firmware' % fpga['uuid'],
                    {'image_uuid': firmware, 'force': True}, ADMIN), 400,
         'force'),
        (flash(cloud, fpga['uuid'], firmware, MEMBER), 403, 'firmware'),
    ]
    for result, status, text in cases:
        got_status, body = _error(result)
        assert (got_status, text in body) == (status, True), (text, body)
    # Nothing was drained and no operation was made.
    assert status_of(cloud, fpga['uuid']) == 'enabled'
    with db_api.reader() as session:
        assert session.query(models.Operation).count() == 0


def test_a_device_in_use_is_not_flashed(cloud):
    device = device_of(cloud)
    assert cloud.call('POST', '/v2/device_profiles', [{
        'name': 'one-fpga', 'groups': [{'resources:FPGA': '1'}]}],
        ADMIN)[0] == 201
    status, created = cloud.call('POST', '/v2/accelerator_requests',
                                 {'device_profile_name': 'one-fpga'}, ADMIN)
    assert status == 201, created
    arq = created['arqs'][0]['uuid']
    status, body = cloud.call('GET', '/v2/deployables?name=region0',
                              headers=ADMIN)
    region = body['deployables'][0]
    instance = '11111111-2222-4333-8444-555555555555'
    assert cloud.call('PATCH', '/v2/accelerator_requests', {arq: [
        {'op': 'add', 'path': '/hostname', 'value': cloud_module.HOST},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': region['rp_uuid']},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]},
        ADMIN)[0] == 202
    cloud.wait_for(lambda: cloud.call(
        'GET', '/v2/accelerator_requests/%s' % arq,
        headers=ADMIN)[1]['state'] == 'Bound')
    image = catalog_images.firmware(cloud, FIRMWARE_2)

    status, body = flash(cloud, device['uuid'], image)

    assert status == 409 and 'unbind' in json.dumps(body), body
    assert status_of(cloud, device['uuid']) == 'enabled'
