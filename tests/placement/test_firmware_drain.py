"""A device being flashed is drained in a real Placement: its regions'
inventory is reserved while the firmware operation runs and after it
fails, given back once it succeeds, and the regions' traits follow the new
firmware's interface (tests/functional/cloud.py against conftest.py's
Placement; the periodic sync is run by hand)."""

from cyborg_like.common import context
from tests.functional import catalog_images
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
HOST = cloud_module.HOST
NEW_INTERFACE = '5e2a8a63-1dfe-4f33-9c54-6c1d4f3c2b7a'
NEW_TRAIT = 'CUSTOM_FPGA_INTERFACE_' + NEW_INTERFACE.replace('-', '').upper()


def _cloud(placement, tmp_path):
    return cloud_module.Cloud(http=True, overrides={
        ('placement', 'auth_type'): 'admin_token',
        ('placement', 'endpoint'): placement.url,
        ('placement', 'token'): 'admin',
        ('conductor', 'firmware_timeout'): 30,
        ('agent', 'image_cache_dir'): str(tmp_path / 'cache'),
    }, placement_sync_by_hand=True).start()


def _regions(cloud):
    [fpga] = [d for d in cloud.list_devices() if d['type'] == 'FPGA']
    regions = [d for d in cloud.conductor_api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc')
        if d['device_id'] == fpga['id']]
    return fpga, regions


def _reserved(placement, regions):
    return [placement.get('/resource_providers/%s/inventories' % r[
        'rp_uuid'])['inventories']['FPGA']['reserved'] for r in regions]


def _operation(cloud, uuid):
    return cloud.conductor_api.get_operation(ADMIN, uuid)


def _flash(cloud, device_uuid, image):
    status, body = cloud.call('POST', '/v2/devices/%s/firmware'
                              % device_uuid, {'image_uuid': image},
                              catalog_images.ADMIN)
    assert status == 202, body
    return body['operation']['uuid']


def test_flashing_reserves_then_restores_with_the_new_interface(
        placement, tmp_path):
    placement.request('POST', '/resource_providers', {'name': HOST},
                      expect=200)
    cloud = _cloud(placement, tmp_path)
    try:
        sync = cloud.services[0].placement.sync_now
        sync()
        fpga, regions = _regions(cloud)
        assert _reserved(placement, regions) == [0, 0]
        image = catalog_images.firmware(
            cloud, 'SLEEP 3\n{"version": "2.0", "interface_id": "%s"}\n'
            % NEW_INTERFACE)

        operation = _flash(cloud, fpga['uuid'], image)

        # While the agent flashes, nothing can be placed on the card.
        sync()
        assert _operation(cloud, operation)['state'] in ('pending',
                                                         'running')
        assert _reserved(placement, regions) == [1, 1]
        cloud.wait_for(lambda: _operation(cloud, operation)['state'] ==
                       'succeeded', timeout=30)
        sync()
        assert _reserved(placement, regions) == [0, 0]
        for region in regions:
            traits = placement.get('/resource_providers/%s/traits'
                                   % region['rp_uuid'])['traits']
            assert NEW_TRAIT in traits
    finally:
        cloud.stop()


def test_a_failed_flash_keeps_the_inventory_reserved(placement, tmp_path):
    placement.request('POST', '/resource_providers', {'name': HOST},
                      expect=200)
    cloud = _cloud(placement, tmp_path)
    try:
        fpga, regions = _regions(cloud)
        image = catalog_images.firmware(cloud, 'FAIL flash write error\n')
        operation = _flash(cloud, fpga['uuid'], image)
        cloud.wait_for(lambda: _operation(cloud, operation)['state'] ==
                       'failed', timeout=30)
        cloud.services[0].placement.sync_now()
        assert _operation(cloud, operation)['detail'] == \
            'Driver fake failed: flash write error'
        assert _reserved(placement, regions) == [1, 1]
    finally:
        cloud.stop()
