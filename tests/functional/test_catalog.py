"""The image catalog end to end in one process: compatibility refused
before any agent is called, function names resolved to images that fit,
and the agent's fetch, verification and cache (fake driver; the real FPGA
drivers are in tests/hardware/test_catalog_agent.py)."""

import hashlib
import os
import urllib.request
import uuid as uuid_lib

import pytest
import webob

from cyborg_like.common import context
from cyborg_like.common import states
from tests.functional import cloud as cloud_module

ADMIN = context.get_admin_context()
IFACE_0 = '9346116d-a52d-5ca8-b06a-a89a2a2f4a1f'     # region0 offers it
IFACE_1 = '11111111-2222-3333-4444-55556666aaaa'     # region1 offers it


@pytest.fixture
def cloud():
    cloud = cloud_module.Cloud(cloud_module.CATALOG_INVENTORY, http=True,
                               overrides={('conductor', 'agent_timeout'): 20}
                               ).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def _image(cloud, data, **metadata):
    metadata.setdefault('name', 'image-%s' % uuid_lib.uuid4().hex[:8])
    status, body = cloud.call('POST', '/v2/bitstreams', metadata)
    assert status == 201, body
    request = webob.Request.blank(
        '/v2/bitstreams/%s/data' % body['uuid'], method='PUT',
        headers={'Content-Type': 'application/octet-stream'})
    request.body = data
    response = request.get_response(cloud.app)
    assert response.status_int == 200, response.body
    return response.json


def _region(cloud, name):
    status, body = cloud.call('GET', '/v2/deployables?name=%s' % name)
    return body['deployables'][0]


def _agent(cloud):
    return cloud.services[1].manager


def _program(cloud, region, image_id):
    return cloud.call('PATCH', '/v2/deployables/%s/program' % region['uuid'],
                      [{'op': 'replace', 'path': '/bitstream_id',
                        'value': image_id}])


def _finished(cloud, operation):
    def done():
        status, found = cloud.call('GET', '/v2/operations/%s' % operation)
        return found if found['state'] in ('succeeded', 'failed') else None
    return cloud.wait_for(done)


def _profile_and_arq(cloud, name, group):
    api = cloud.conductor_api
    api.create_device_profile(ADMIN, name, [dict(group, **{
        'resources:FPGA': '1'})], None)
    return api.create_arqs(ADMIN, name, None)[0]['uuid']


def _bind(cloud, arq, region):
    cloud.conductor_api.bind_arqs(ADMIN, {arq: {
        'hostname': cloud_module.HOST, 'device_rp_uuid': region['rp_uuid'],
        'instance_uuid': str(uuid_lib.uuid4()), 'project_id': None}})

    def done():
        found = cloud.conductor_api.get_arq(ADMIN, arq)
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(done, timeout=30)


def test_download_is_the_uploaded_bytes_over_http(cloud):
    data = os.urandom(300 * 1024)
    image = _image(cloud, data)
    with urllib.request.urlopen('%s/v2/bitstreams/%s/data'
                                % (cloud.url, image['uuid'])) as response:
        assert response.headers['Content-Length'] == str(len(data))
        assert response.headers['X-Image-Sha256'] == \
            hashlib.sha256(data).hexdigest()
        assert response.read() == data


def test_program_of_an_incompatible_image_is_refused_without_the_agent(
        cloud):
    image = _image(cloud, b'crypto for region0', interface_id=IFACE_0)
    # No agent at all: a refusal that needed one could not answer at once.
    cloud.services.pop(1).stop()
    status, body = _program(cloud, _region(cloud, 'region1'), image['uuid'])
    assert status == 409
    assert IFACE_0 in body['error_message'] and \
        IFACE_1 in body['error_message']
    status, ops = cloud.call('GET', '/v2/operations')
    assert ops['operations'] == []


def test_bind_of_an_incompatible_image_fails_without_the_agent(cloud):
    image = _image(cloud, b'crypto for region0', interface_id=IFACE_0)
    arq = _profile_and_arq(cloud, 'crypto0',
                           {'accel:bitstream_id': image['uuid']})
    cloud.services.pop(1).stop()
    result = _bind(cloud, arq, _region(cloud, 'region1'))
    assert result['state'] == states.BIND_FAILED
    assert 'needs interface %s' % IFACE_0 in result['state_reason']
    assert 'offers %s' % IFACE_1 in result['state_reason']
    assert result['attach_handle_info'] in (None, {})


def test_function_name_resolves_to_the_image_that_fits(cloud):
    for_0 = _image(cloud, b'crypto v1 for region0', interface_id=IFACE_0,
                   function_name='crypto')
    for_1 = _image(cloud, b'crypto v1 for region1', interface_id=IFACE_1,
                   function_name='crypto')
    _image(cloud, b'zip for region1', interface_id=IFACE_1,
           function_name='zip')
    arq = _profile_and_arq(cloud, 'crypto', {'accel:function_name': 'crypto'})
    result = _bind(cloud, arq, _region(cloud, 'region1'))
    assert result['state'] == states.BOUND, result['state_reason']
    assert _region(cloud, 'region1')['bitstream_id'] == for_1['uuid']
    assert _agent(cloud).images.cached() == [for_1['uuid']]
    assert for_0['uuid'] not in _agent(cloud).images.cached()


def test_function_name_prefers_the_image_the_region_holds(cloud):
    old = _image(cloud, b'crypto v1', interface_id=IFACE_0,
                 function_name='crypto', function_version='1')
    status, body = _program(cloud, _region(cloud, 'region0'), old['uuid'])
    assert _finished(cloud, body['operation']['uuid'])['state'] == \
        'succeeded'
    newer = _image(cloud, b'crypto v2', interface_id=IFACE_0,
                   function_name='crypto', function_version='2')
    downloads = _agent(cloud).images.downloads
    arq = _profile_and_arq(cloud, 'crypto', {'accel:function_name': 'crypto'})
    result = _bind(cloud, arq, _region(cloud, 'region0'))
    assert result['state'] == states.BOUND, result['state_reason']
    # Held already: nothing fetched, nothing programmed.
    assert _region(cloud, 'region0')['bitstream_id'] == old['uuid']
    assert _agent(cloud).images.downloads == downloads
    assert newer['uuid'] not in _agent(cloud).images.cached()


def test_function_name_narrowed_by_version(cloud):
    _image(cloud, b'crypto v1', interface_id=IFACE_0,
           function_name='crypto', function_version='1')
    v2 = _image(cloud, b'crypto v2', interface_id=IFACE_0,
                function_name='crypto', function_version='2')
    v3 = _image(cloud, b'crypto v3', interface_id=IFACE_0,
                function_name='crypto', function_version='3')
    arq = _profile_and_arq(cloud, 'crypto2', {
        'accel:function_name': 'crypto', 'accel:function_version': '2'})
    result = _bind(cloud, arq, _region(cloud, 'region0'))
    assert result['state'] == states.BOUND, result['state_reason']
    assert _region(cloud, 'region0')['bitstream_id'] == v2['uuid']
    assert v3['uuid'] not in _agent(cloud).images.cached()


def test_function_without_a_fitting_image_fails_the_bind(cloud):
    _image(cloud, b'crypto for region0', interface_id=IFACE_0,
           function_name='crypto')
    arq = _profile_and_arq(cloud, 'crypto', {'accel:function_name': 'crypto'})
    result = _bind(cloud, arq, _region(cloud, 'region1'))
    assert result['state'] == states.BIND_FAILED
    assert 'No active image of function crypto fits region' in \
        result['state_reason']
    assert IFACE_0 in result['state_reason'] and \
        IFACE_1 in result['state_reason']


def test_second_programming_does_not_fetch_again(cloud):
    image = _image(cloud, os.urandom(100 * 1024), interface_id=IFACE_0)
    region = _region(cloud, 'region0')
    for _ in range(2):
        status, body = _program(cloud, region, image['uuid'])
        assert status == 202, body
        assert _finished(cloud, body['operation']['uuid'])['state'] == \
            'succeeded'
    assert _agent(cloud).images.downloads == 1
    assert _region(cloud, 'region0')['bitstream_id'] == image['uuid']


def test_corrupted_download_is_refused_and_nothing_programmed(cloud):
    image = _image(cloud, b'the real image bytes', interface_id=IFACE_0)
    # The stored copy is damaged after upload (disk, a bad mirror).
    store_dir = os.path.join(cloud._tmp.name, 'images')
    [name] = [n for n in os.listdir(store_dir) if n.startswith(image['uuid'])]
    with open(os.path.join(store_dir, name), 'wb') as f:
        f.write(b'the fake image bytes')
    status, body = _program(cloud, _region(cloud, 'region0'), image['uuid'])
    operation = _finished(cloud, body['operation']['uuid'])
    assert operation['state'] == 'failed'
    assert 'refused' in operation['detail'] and \
        image['sha256'] in operation['detail']
    assert _region(cloud, 'region0')['bitstream_id'] is None
    assert _agent(cloud).images.cached() == []


def test_cache_evicts_the_least_recently_used(cloud):
    cache = _agent(cloud).images
    cache.max_bytes = 250 * 1024
    images = [_image(cloud, os.urandom(100 * 1024), interface_id=IFACE_0)
              for _ in range(3)]
    region = _region(cloud, 'region0')
    for image in images[:2] + images[:1] + images[2:]:
        status, body = _program(cloud, region, image['uuid'])
        assert _finished(cloud, body['operation']['uuid'])['state'] == \
            'succeeded'
    # images[1] was used least recently when images[2] came in.
    assert cache.cached() == sorted([images[0]['uuid'], images[2]['uuid']])
    assert cache.downloads == 3
