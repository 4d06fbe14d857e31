"""A drained device says so itself (issue 34): from microversion 2.4 the
device (list and show, served by the read model) and its health carry
``drained`` and ``drain_reasons``, whatever drained it -- a driver
operation, a firmware flash, its health readings; at 2.3 and below every
answer is what it was. Real conductor and agent; the fake driver stands
in for the hardware (its inventory file and the stand-in playbooks)."""

import json
import os

import pytest
import yaml

from tests.functional import catalog_images
from tests.functional import cloud as cloud_module

PLAYBOOKS = os.path.join(os.path.dirname(__file__), '..', 'playbooks')
HOST = cloud_module.HOST
ADMIN = catalog_images.ADMIN
# What a device shows at each microversion before 2.4 (gabbits/devices.yaml).
KEYS_2_0 = {'uuid', 'type', 'vendor', 'model', 'std_board_info',
            'vendor_board_info', 'hostname', 'created_at', 'updated_at',
            'links'}
KEYS_2_3 = KEYS_2_0 | {'status'}
HEALTH_KEYS = {'device_uuid', 'health', 'service_state', 'healthy_checks',
               'service_changed_at', 'reasons', 'unchecked', 'utilization',
               'updated_at', 'history'}


def _get(cloud, path, version):
    status, body = cloud.call('GET', path, headers=dict(ADMIN, **{
        'OpenStack-API-Version': 'accelerator %s' % version}))
    assert status == 200, body
    return body


def _devices(cloud, version):
    """{model: device} as listed, each also shown by uuid (the same)."""
    listed = _get(cloud, '/v2/devices', version)['devices']
    for device in listed:
        assert _get(cloud, '/v2/devices/%s' % device['uuid'],
                    version) == device
    return {d['model']: d for d in listed}


def _health(cloud, uuid, version):
    return _get(cloud, '/v2/devices/%s/health?history=0' % uuid, version)


def _assert_older_versions_unchanged(cloud, drained_uuid):
    """2.0 and 2.3 answer as before 2.4 existed, drained or not."""
    for version, keys in (('2.0', KEYS_2_0), ('2.3', KEYS_2_3)):
        for device in _devices(cloud, version).values():
            assert set(device) == keys, (version, device)
        health = _health(cloud, drained_uuid, version)
        assert set(health) == HEALTH_KEYS
        assert health['service_state'] == 'serving'
    assert _devices(cloud, '2.3')['A100']['status'] == 'enabled'


def _ended(cloud, uuid, timeout=60):
    def ended():
        status, body = cloud.call('GET', '/v2/operations/%s' % uuid,
                                  headers=ADMIN)
        assert status == 200, body
        return body if body['state'] in ('succeeded', 'failed',
                                         'cancelled') else None
    return cloud.wait_for(ended, timeout=timeout)


# -- a driver operation -----------------------------------------------------

@pytest.fixture
def driver_cloud(tmp_path, monkeypatch):
    """The GPUs driven by the "nvidia" family, whose stand-in playbooks
    the agent runs (as tests/functional/test_driver_operations.py)."""
    drivers = cloud_module.installed_drivers(tmp_path, monkeypatch)
    inventory = cloud_module.nvidia_family_inventory(tmp_path)
    cloud = cloud_module.Cloud(str(inventory), overrides={
        ('agent', 'playbook_dir'): os.path.abspath(PLAYBOOKS),
        ('agent', 'playbook_timeout'): 120,
        ('agent', 'heartbeat_interval'): 1,
        ('fake_driver', 'driver_state_dir'): str(drivers),
    }).start()
    try:
        cloud.wait_for(lambda: _get(cloud, '/v2/hosts/%s' % HOST, '2.0')[
            'agent_version'] == '1.2')
        yield cloud, drivers
    finally:
        cloud.stop()


def _driver_operation(cloud, drivers, behaviour, **request):
    (drivers / 'behaviour.json').write_text(json.dumps(behaviour))
    status, body = cloud.call('POST', '/v2/hosts/%s/driver_operations'
                              % HOST, request, ADMIN)
    assert status == 202, body
    return _ended(cloud, body['uuid'])


def test_a_failed_driver_operation_shows_on_its_devices(driver_cloud):
    cloud, drivers = driver_cloud
    failed = _driver_operation(
        cloud, drivers, {'fail_task': 'Load the driver',
                         'fail_message': 'nvidia.ko: Unknown symbol'},
        action='install', family='nvidia', version='2.0')
    assert failed['state'] == 'failed', failed

    devices = _devices(cloud, '2.4')
    for model in ('A100', 'T4'):
        assert devices[model]['drained'] is True
        [reason] = devices[model]['drain_reasons']
        assert reason['cause'] == 'driver_operation'
        assert reason['operation_uuid'] == failed['uuid']
        assert 'Load the driver' in reason['reason']
        # As the host lists it.
        assert {'uuid': devices[model]['uuid'],
                'drained_by': failed['uuid'],
                'reason': reason['reason']} in _get(
            cloud, '/v2/hosts/%s' % HOST, '2.4')['drained_devices']
    assert devices['A100']['status'] == 'enabled'
    assert (devices['PAC N3000']['drained'],
            devices['PAC N3000']['drain_reasons']) == (False, [])
    health = _health(cloud, devices['A100']['uuid'], '2.4')
    assert (health['service_state'], health['drained']) == ('drained', True)
    assert health['drain_reasons'] == devices['A100']['drain_reasons']
    _assert_older_versions_unchanged(cloud, devices['A100']['uuid'])

    # A verify that passes returns them.
    assert _driver_operation(cloud, drivers, {}, action='verify',
                             family='nvidia')['state'] == 'succeeded'
    devices = _devices(cloud, '2.4')
    assert [devices[m]['drained'] for m in ('A100', 'T4')] == [False, False]
    assert _health(cloud, devices['A100']['uuid'], '2.4')[
        'service_state'] == 'serving'


# -- a firmware flash -------------------------------------------------------

@pytest.fixture
def catalog_cloud(tmp_path):
    """The agent fetches images from the API over HTTP (as test_firmware)."""
    cloud = cloud_module.catalog_cloud(tmp_path).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def _flash(cloud, uuid, text):
    image = catalog_images.firmware(cloud, text, board='0x0b30')
    status, started = cloud.call('POST', '/v2/devices/%s/firmware' % uuid,
                                 {'image_uuid': image}, dict(ADMIN, **{
                                     'OpenStack-API-Version':
                                     'accelerator 2.4'}))
    assert status == 202, started
    return started


def _fpga(cloud, version='2.4'):
    [fpga] = [d for d in _devices(cloud, version).values()
              if d['type'] == 'FPGA']
    return fpga


def test_a_flash_shows_on_its_device_until_enabled(catalog_cloud):
    cloud = catalog_cloud
    fpga = _fpga(cloud)
    started = _flash(cloud, fpga['uuid'], 'SLEEP 1\nFAIL flash write error\n')
    operation = started['operation']['uuid']
    # The 202 shows the device drained by it.
    assert started['device']['drained'] is True
    assert [(r['cause'], r['operation_uuid'])
            for r in started['device']['drain_reasons']] == [
        ('firmware', operation)]
    assert _ended(cloud, operation)['state'] == 'failed'

    # Failed: still drained by it, until an operator enables the device.
    fpga = _fpga(cloud)
    assert (fpga['status'], fpga['drained']) == ('maintaining', True)
    [reason] = fpga['drain_reasons']
    assert (reason['cause'], reason['operation_uuid']) == ('firmware',
                                                           operation)
    assert operation in reason['reason']
    assert _fpga(cloud, '2.3')['status'] == 'maintaining'
    assert set(_fpga(cloud, '2.3')) == KEYS_2_3
    status, enabled = cloud.call(
        'POST', '/v2/devices/%s/enable' % fpga['uuid'], headers=dict(
            ADMIN, **{'OpenStack-API-Version': 'accelerator 2.4'}))
    assert status == 200, enabled
    assert (enabled['drained'], enabled['drain_reasons']) == (False, [])
    assert _fpga(cloud)['drained'] is False


def test_a_flash_of_a_disabled_device_ends_its_drain(catalog_cloud):
    """The status stays maintaining (the operator's), but the flash that
    succeeded drains it no more: the read model hears of it."""
    cloud = catalog_cloud
    fpga = _fpga(cloud)
    assert cloud.call('POST', '/v2/devices/%s/disable' % fpga['uuid'],
                      headers=ADMIN)[0] == 200
    assert _fpga(cloud)['drained'] is False
    started = _flash(cloud, fpga['uuid'], 'SLEEP 1\n{"version": "2.0"}\n')
    assert started['device']['drained'] is True
    assert _ended(cloud, started['operation']['uuid'])['state'] == \
        'succeeded'
    fpga = _fpga(cloud)
    assert (fpga['status'], fpga['drained'], fpga['drain_reasons']) == (
        'maintaining', False, [])


# -- health -----------------------------------------------------------------

@pytest.fixture
def sick_cloud(tmp_path):
    """The A100 reads unhealthy (the fake driver's inventory says so)."""
    document = yaml.safe_load(open(cloud_module.INVENTORY))
    for device in document['devices']:
        if device['model'] == 'A100':
            device['health'] = {'healthy': False,
                                'reasons': ['3 uncorrectable ECC errors']}
    inventory = tmp_path / 'inventory.yaml'
    inventory.write_text(yaml.safe_dump(document))
    cloud = cloud_module.Cloud(str(inventory), overrides={
        ('agent', 'heartbeat_interval'): 1}).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def test_a_health_drain_shows_on_the_device(sick_cloud):
    cloud = sick_cloud
    a100 = cloud.wait_for(lambda: (lambda d: d if d['drained'] else None)(
        _devices(cloud, '2.4')['A100']))
    assert [(r['cause'], r['operation_uuid'])
            for r in a100['drain_reasons']] == [('health', None)]
    assert _devices(cloud, '2.4')['T4']['drained'] is False
    health = _health(cloud, a100['uuid'], '2.4')
    assert (health['service_state'], health['drained']) == ('drained', True)
    for version, keys in (('2.0', KEYS_2_0), ('2.3', KEYS_2_3)):
        assert set(_devices(cloud, version)['A100']) == keys
        assert set(_health(cloud, a100['uuid'], version)) == HEALTH_KEYS
