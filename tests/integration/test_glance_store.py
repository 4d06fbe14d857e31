"""The catalog's ``glance`` store against a real Glance (glance.py), found
through the real Keystone's catalog with the ``[glance]`` options."""

import hashlib
import os
import uuid

from oslo_config import cfg
import pytest
import requests

from cyborg_like.catalog import glance_store
from cyborg_like.catalog import store as catalog_store
from cyborg_like.common import exception
from cyborg_like.conf import catalog as catalog_conf
from cyborg_like.conf import default as default_conf
from cyborg_like.conf import glance as glance_conf
from tests import images

from .infra import BACKENDS
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

IFC = '9346116d-a52d-4ca8-9f87-e2d9e5b3a7c1'
AFU = 'd8424dc4-a4a3-c413-f89e-433683f9040b'
CHUNK = 64 * 1024


def make_conf(tmp_path, glance_options):
    # A file, as in a deployment: keystoneauth registers the options of
    # the auth plugin only when it loads it.
    path = tmp_path / 'cyborg_like.conf'
    path.write_text('[DEFAULT]\nstate_path = %s\n[catalog]\nstore = glance\n'
                    '[glance]\n%s\n' % (tmp_path, '\n'.join(
                        '%s = %s' % item for item in glance_options.items())))
    conf = cfg.ConfigOpts()
    for module in (default_conf, catalog_conf, glance_conf):
        module.register_opts(conf)
    conf(['--config-file', str(path)], default_config_files=[])
    return conf


@pytest.fixture
def store(glance_cloud, tmp_path):
    """The store as the services load it: by name, through stevedore."""
    return catalog_store.load(make_conf(tmp_path,
                                        glance_cloud.store_config()))


def chunks_of(data):
    for start in range(0, len(data), CHUNK):
        yield data[start:start + CHUNK]


def metadata(**extra):
    values = {'name': 'nlb0-n3000', 'kind': 'bitstream', 'vendor': '0x8086',
              'board': '0x0b30', 'interface_id': IFC,
              'function_name': 'nlb0', 'hardware_id': AFU,
              'function_version': None}
    values.update(extra)
    return values


def test_loaded_by_name(store):
    assert isinstance(store, glance_store.GlanceStore)


def test_round_trip_keeps_the_catalog_uuid_as_glance_id(store,
                                                        glance_cloud):
    image_uuid = str(uuid.uuid4())
    data = images.gbs(IFC, AFU, payload=os.urandom(3 * 1024 * 1024 + 17))
    location = store.put(image_uuid, chunks_of(data), metadata())
    assert location == image_uuid

    read = b''.join(store.open(location))
    assert hashlib.sha256(read).hexdigest() == \
        hashlib.sha256(data).hexdigest()

    image = glance_cloud.admin_request('GET', '/v2/images/' + location)
    assert image.status_code == 200, image.text
    image = image.json()
    assert (image['status'], image['size'], image['name']) == (
        'active', len(data), 'nlb0-n3000')
    # Cyborg's metadata names, and ours for every key given.
    assert {k: image.get(k) for k in ('shell_id', 'bs-uuid', 'bs-name',
                                      'vendor', 'board')} == {
        'shell_id': IFC, 'bs-uuid': AFU, 'bs-name': 'nlb0',
        'vendor': '0x8086', 'board': '0x0b30'}
    assert (image['accel_kind'], image['accel_catalog_uuid']) == (
        'bitstream', image_uuid)
    assert 'accel_function_version' not in image
    assert image['owner'] == glance_cloud.keystone.project_ids['images']


def test_delete_removes_the_glance_image(store, glance_cloud):
    location = store.put(uuid.uuid4(), chunks_of(b'x' * 1000), metadata())
    store.delete(location)
    assert glance_cloud.admin_request(
        'GET', '/v2/images/' + location).status_code == 404
    with pytest.raises(exception.ImageDataNotFound):
        store.open(location)
    # Deletes are retried after partial failures: gone is not an error.
    store.delete(location)


def test_a_second_put_of_the_same_image_gets_a_new_location(store):
    image_uuid = uuid.uuid4()
    first = store.put(image_uuid, chunks_of(b'one'), metadata())
    second = store.put(image_uuid, chunks_of(b'two'), metadata())
    assert first == str(image_uuid) and second != first
    assert b''.join(store.open(first)) == b'one'
    assert b''.join(store.open(second)) == b'two'


class ClientWentAway(Exception):
    pass


def test_a_failed_upload_leaves_no_image(store, glance_cloud):
    image_uuid = str(uuid.uuid4())

    def interrupted():
        yield b'a' * CHUNK
        yield b'b' * CHUNK
        raise ClientWentAway()

    with pytest.raises(ClientWentAway):
        store.put(image_uuid, interrupted(), metadata())
    assert glance_cloud.admin_request(
        'GET', '/v2/images/' + image_uuid).status_code == 404


def test_open_of_an_image_without_data(store, glance_cloud):
    # Created, never uploaded (as after a crash between the two steps).
    created = glance_cloud.admin_request(
        'POST', '/v2/images', json={'name': 'empty', 'disk_format': 'raw',
                                    'container_format': 'bare'})
    assert created.status_code == 201, created.text
    image_id = created.json()['id']
    try:
        with pytest.raises(exception.ImageDataNotFound):
            store.open(image_id)
    finally:
        glance_cloud.admin_request('DELETE', '/v2/images/' + image_id)


# A fixed uuid no image has: parameters must be the same in every xdist
# worker's collection.
@pytest.mark.parametrize('location', ['0e7c1f2a-4b9d-4c55-9a3e-6f1d2b8c7a10',
                                      'not-a-uuid', ''])
def test_open_of_unknown_locations(store, location):
    with pytest.raises(exception.ImageDataNotFound):
        store.open(location)


def test_wrong_credentials_are_a_store_error(glance_cloud, tmp_path):
    options = dict(glance_cloud.store_config(), password='wrong')
    store = catalog_store.load(make_conf(tmp_path, options))
    with pytest.raises(glance_store.GlanceError) as raised:
        store.put(uuid.uuid4(), chunks_of(b'x'), metadata())
    assert isinstance(raised.value, exception.ServiceUnavailable)


def test_no_download_url_for_agents(store):
    assert store.download_url(str(uuid.uuid4())) is None


# -- the whole service on the glance store -----------------------------------

@pytest.fixture(scope='module')
def glance_deployment(glance_cloud, tmp_path_factory):
    """Conductor, agent and API (noauth) whose catalog keeps its images in
    the session's Glance; MariaDB, the first backend."""
    options = '\n'.join('%s = %s' % item
                        for item in glance_cloud.store_config().items())
    workdir = str(tmp_path_factory.mktemp('glance-deployment'))
    with running_deployment(
            BACKENDS[0], workdir,
            extra_config='[catalog]\nstore = glance\n[glance]\n%s\n'
            % options,
            wait_for_devices=lambda devices: len(devices) == 2) as dep:
        dep.wait_host_up()
        yield dep


def _upload(dep, data, name):
    image = dep.call('POST', '/v2/bitstreams',
                     {'name': name, 'kind': 'bitstream'}, 201).json()
    resp = requests.put('%s/v2/bitstreams/%s/data' % (dep.api_url,
                                                      image['uuid']),
                        data=data, timeout=30, headers={
                            'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 200, resp.text
    return image['uuid']


def test_an_image_uploaded_through_the_api_is_a_glance_image_agents_get(
        glance_deployment, glance_cloud):
    dep = glance_deployment
    data = b'GBS kept in Glance\n' + os.urandom(200000)
    image = _upload(dep, data, 'from-glance')

    # The bitstream id is the Glance image id; Glance has the bytes.
    found = glance_cloud.admin_request('GET', '/v2/images/' + image)
    assert found.status_code == 200, found.text
    assert (found.json()['status'], found.json()['size'],
            found.json()['accel_kind']) == ('active', len(data),
                                            'bitstream')
    served = dep.get('/v2/bitstreams/%s/data' % image)
    assert served.status_code == 200 and served.content == data

    # Programming by that id: the agent fetches it through the API.
    [region] = [d for d in dep.list_ok('deployables')
                if d['name'] == 'region0']
    started = dep.call('PATCH', '/v2/deployables/%s/program'
                       % region['uuid'], [{'op': 'replace',
                                           'path': '/bitstream_id',
                                           'value': image}], 202)
    operation = started.headers['Location'].rsplit('/', 1)[1]
    wait_for(lambda: dep.call('GET', '/v2/operations/%s' % operation)
             .json()['state'] == 'succeeded', timeout=60,
             message='programming from a Glance image did not succeed')
    wait_for(lambda: dep.call('GET', '/v2/deployables/%s' % region['uuid'])
             .json()['bitstream_id'] == image, timeout=30,
             message='the region never showed the Glance image id')


def test_deleting_a_catalog_image_deletes_the_glance_image(
        glance_deployment, glance_cloud):
    dep = glance_deployment
    image = _upload(dep, b'short-lived\n', 'short-lived')
    assert glance_cloud.admin_request(
        'GET', '/v2/images/' + image).status_code == 200
    dep.call('DELETE', '/v2/bitstreams/%s' % image, expected=204)
    assert glance_cloud.admin_request(
        'GET', '/v2/images/' + image).status_code == 404
