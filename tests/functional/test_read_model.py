"""The read model in the whole service: the same answers as the conductor,
read-your-writes, announcements, re-sync by generation, ETags
(docs/design.md, "The read model")."""

import time

import pytest
import webob

from cyborg_like.api import app as app_lib
from cyborg_like.api import read_model
from cyborg_like.common import context
from cyborg_like.conf import CONF
from tests.functional import cloud as cloud_module

LATEST = {'OpenStack-API-Version': 'accelerator latest'}


def _get(app, path, headers=None):
    response = webob.Request.blank(path, headers=headers or {}) \
        .get_response(app)
    return (response.status_int, response.json if response.body else None,
            response.headers.get('ETag'))


def _call(app, method, path, body=None):
    request = webob.Request.blank(path, method=method)
    if body is not None:
        request.json_body = body
    return request.get_response(app)


@pytest.fixture
def rpc_app(cloud):
    """The same API built with [api] read_model off: every read a call."""
    CONF.set_override('read_model', False, group='api')
    try:
        return app_lib.setup_app(CONF, cloud.conductor_api)
    finally:
        CONF.clear_override('read_model', group='api')


def _queries(cloud):
    devices = _get(cloud.app, '/v2/devices')[1]['devices']
    deps = _get(cloud.app, '/v2/deployables')[1]['deployables']
    attrs = _get(cloud.app, '/v2/attributes')[1]['attributes']
    profiles = _get(cloud.app, '/v2/device_profiles')[1]['device_profiles']
    paths = ['/v2/devices', '/v2/devices?limit=1', '/v2/devices?limit=2',
             '/v2/devices?sort_dir=desc&limit=2', '/v2/devices?type=GPU',
             '/v2/devices?type=gpu', '/v2/devices?vendor=0x10de&limit=1',
             '/v2/devices?hostname=nowhere', '/v2/devices?status=enabled',
             '/v2/devices?sort_key=model', '/v2/devices?sort_key=uuid'
             '&sort_dir=desc', '/v2/devices?marker=%s' % ('0' * 32),
             '/v2/deployables', '/v2/deployables?name=gpu0',
             '/v2/deployables?limit=1&sort_dir=desc',
             '/v2/deployables?rp_uuid=%s' % deps[0]['rp_uuid'],
             '/v2/deployables?bitstream_id=nothing',
             '/v2/attributes', '/v2/attributes?key=rc',
             '/v2/attributes?key=', '/v2/attributes?deployable_id=%s'
             % attrs[0]['deployable_id'], '/v2/attributes?limit=3',
             '/v2/device_profiles', '/v2/device_profiles?name=p2,p4',
             '/v2/device_profiles?limit=2&sort_dir=desc',
             '/v2/device_profiles?name=P2',
             '/v2/device_profiles/p3', '/v2/device_profiles/nothing',
             '/v2/devices/%s' % ('0' * 32)]
    for resource, items in (('devices', devices), ('deployables', deps),
                            ('attributes', attrs),
                            ('device_profiles', profiles)):
        for item in items:
            paths.append('/v2/%s/%s' % (resource, item['uuid']))
            for direction in ('asc', 'desc'):
                paths.append('/v2/%s?limit=2&marker=%s&sort_dir=%s' % (
                    resource, item['uuid'], direction))
    return paths


def test_the_copy_answers_as_the_conductor_does(cloud, rpc_app):
    for n in range(5):
        response = _call(cloud.app, 'POST', '/v2/device_profiles', {
            'name': 'p%d' % n, 'groups': [{'resources:PGPU': '1'}]})
        assert response.status_int == 201
    assert read_model.wait_current()
    served = 0
    for path in _queries(cloud):
        for headers in ({}, LATEST):
            ours = _get(cloud.app, path, headers)
            assert ours[:2] == _get(rpc_app, path, headers)[:2], path
            served += ours[2] is not None
    # Every default-ordered list and every show of a known record is an
    # answer of the copy (with its ETag).
    assert served >= 150, served


def test_own_writes_are_read_back_at_once(cloud):
    assert read_model.wait_current()
    for device in _get(cloud.app, '/v2/devices')[1]['devices']:
        uuid = device['uuid']
        assert _call(cloud.app, 'POST',
                     '/v2/devices/%s/disable' % uuid).status_int == 200
        assert _get(cloud.app, '/v2/devices/%s' % uuid,
                    LATEST)[1]['status'] == 'maintaining'
        assert _call(cloud.app, 'POST',
                     '/v2/devices/%s/enable' % uuid).status_int == 200
        assert _get(cloud.app, '/v2/devices/%s' % uuid,
                    LATEST)[1]['status'] == 'enabled'
    for n in range(3):
        _call(cloud.app, 'POST', '/v2/device_profiles', {
            'name': 'mine%d' % n, 'groups': [{'resources:PGPU': '1'}]})
        names = [p['name'] for p in _get(cloud.app, '/v2/device_profiles')[
            1]['device_profiles']]
        assert names[-1] == 'mine%d' % n
        _call(cloud.app, 'DELETE', '/v2/device_profiles/mine%d' % n)
        assert _get(cloud.app, '/v2/device_profiles/mine%d' % n,
                    LATEST)[0] == 404


def _wait_served(app, path, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body, etag = _get(app, path)
        if etag is not None and predicate(body):
            return time.monotonic()
        time.sleep(0.01)
    raise AssertionError('%s not served as wanted within %ss'
                         % (path, timeout))


def _checking_every(seconds):
    """A cloud whose API confirms its copy every ``seconds``."""
    cloud = cloud_module.Cloud(overrides={
        ('api', 'read_model_check_interval'): seconds}).start()
    try:
        yield cloud
    finally:
        cloud.stop()


@pytest.fixture
def no_checks():
    """Confirmed once an hour: only an announcement makes the copy see
    another process's write in a test's time."""
    yield from _checking_every(3600)


def test_others_writes_are_announced(no_checks):
    cloud = no_checks
    assert read_model.wait_current()
    written = time.monotonic()
    # Another API process's write: straight to the conductor.
    cloud.conductor_api.create_device_profile(
        context.get_admin_context(), 'theirs', [{'resources:PGPU': '1'}],
        None)
    # Served from the copy (an ETag) with no check to find it: announced.
    # (It compared the time with the 2 s check interval, and failed at
    # 2.4 s beside other work.)
    seen = _wait_served(cloud.app, '/v2/device_profiles', lambda body: [
        p for p in body['device_profiles'] if p['name'] == 'theirs'], 30)
    print('announced and served in %.2f s' % (seen - written))


@pytest.fixture
def quick_checks():
    yield from _checking_every(0.3)


def test_a_lost_announcement_is_caught_up_by_generation(quick_checks):
    cloud = quick_checks
    conductor = cloud.services[0]
    assert read_model.wait_current()
    _, before, etag = _get(cloud.app, '/v2/device_profiles')
    assert etag is not None
    # The broker drops the fanout: the conductor announces nothing.
    conductor.read_model.stop()
    cloud.conductor_api.create_device_profile(
        context.get_admin_context(), 'unannounced',
        [{'resources:PGPU': '1'}], None)
    started = time.monotonic()
    # Served from the copy (an ETag) once a generation check found the
    # change: the docs state twice the check interval (0.6 s here; 1 s
    # alone, 2 s once beside the whole suite): a ceiling ten times that.
    seen = _wait_served(cloud.app, '/v2/device_profiles', lambda body: [
        p for p in body['device_profiles'] if p['name'] == 'unannounced'],
        10 * 2 * 0.3)
    print('caught up by generation in %.2f s' % (seen - started))
    assert _get(cloud.app, '/v2/device_profiles')[2] != etag


def test_etags_answer_304_until_the_family_changes(cloud):
    assert read_model.wait_current()
    status, body, etag = _get(cloud.app, '/v2/devices')
    assert status == 200 and etag
    request = webob.Request.blank('/v2/devices',
                                  headers={'If-None-Match': etag})
    response = request.get_response(cloud.app)
    assert response.status_int == 304 and response.body == b''
    # Another representation of the same generation: another tag.
    assert _get(cloud.app, '/v2/devices', LATEST)[2] != etag
    uuid = body['devices'][0]['uuid']
    _call(cloud.app, 'POST', '/v2/devices/%s/disable' % uuid)
    _wait_served(cloud.app, '/v2/devices', lambda body: True, 5)
    assert webob.Request.blank('/v2/devices', headers={
        'If-None-Match': etag}).get_response(cloud.app).status_int == 200


def test_a_304_is_answered_before_the_handler_runs(cloud, monkeypatch):
    """For every read the copies serve, list and show: the ETag of a 200
    in If-None-Match gets a 304 with that ETag, without the handler
    reading the copy (its page or row lookups fail here); the handler's
    policy is still checked first."""
    assert read_model.wait_current()
    device = _get(cloud.app, '/v2/devices')[1]['devices'][0]['uuid']
    deployable = _get(cloud.app, '/v2/deployables')[1]['deployables'][0][
        'uuid']
    _call(cloud.app, 'POST', '/v2/attributes', {
        'deployable_id': 1, 'key': 'early', 'value': 'CUSTOM_EARLY'})
    _call(cloud.app, 'POST', '/v2/device_profiles', [{
        'name': 'early', 'groups': [{'resources:FPGA': '1'}]}])
    assert read_model.wait_current()
    attribute = _get(cloud.app, '/v2/attributes')[1]['attributes'][0][
        'uuid']
    profile = _get(cloud.app, '/v2/device_profiles')[1]['device_profiles'][
        0]['uuid']
    paths = ['/v2/devices', '/v2/devices/%s' % device, '/v2/deployables',
             '/v2/deployables/%s' % deployable, '/v2/attributes',
             '/v2/attributes/%s' % attribute, '/v2/device_profiles',
             '/v2/device_profiles/%s' % profile,
             '/v2/devices?type=FPGA&limit=1']
    etags = {}
    for path in paths:
        status, _body, etags[path] = _get(cloud.app, path, LATEST)
        assert status == 200 and etags[path], path

    def no_reading(*args, **kwargs):
        raise AssertionError('the handler read the copy')
    monkeypatch.setattr(read_model.ModelledConductorAPI, '_page', no_reading)
    monkeypatch.setattr(read_model.ModelledConductorAPI, '_one', no_reading)
    for path in paths:
        response = webob.Request.blank(path, headers=dict(
            LATEST, **{'If-None-Match': etags[path]})).get_response(
                cloud.app)
        assert (response.status_int, response.body,
                response.headers['ETag']) == (304, b'', etags[path]), path
        # The policy answers first: a member may read profiles only.
        response = webob.Request.blank(path, headers=dict(
            LATEST, **{'If-None-Match': etags[path],
                       'X-Roles': 'member,reader',
                       'X-Project-Id': 'project-one'})).get_response(
                cloud.app)
        assert response.status_int == (
            304 if path.startswith('/v2/device_profiles') else 403), path


def _counting(cloud, monkeypatch, method):
    asked = []
    real = getattr(cloud.conductor_api, method)

    def counted(*args, **kwargs):
        asked.append(method)
        return real(*args, **kwargs)
    monkeypatch.setattr(cloud.conductor_api, method, counted)
    return asked


def _arq(cloud):
    cloud.conductor_api.create_device_profile(
        context.get_admin_context(), 'arq-answers',
        [{'resources:PGPU': '1'}], None)
    response = _call(cloud.app, 'POST', '/v2/accelerator_requests',
                     {'device_profile_name': 'arq-answers'})
    assert response.status_int == 201
    return response.json['arqs'][0]['uuid']


def test_arq_answers_are_given_again_until_a_change(cloud, monkeypatch,
                                                    rpc_app):
    """ARQ shows and lists (api/arq_cache.py): the conductor is asked
    once while nothing changes; another client's change is seen once
    announced; this process's own write at once; the answers are the
    conductor's."""
    uuid = _arq(cloud)
    admin = context.get_admin_context()
    assert read_model.wait_current()
    shows = _counting(cloud, monkeypatch, 'get_arq')
    lists = _counting(cloud, monkeypatch, 'list_arqs')
    paths = ['/v2/accelerator_requests/%s' % uuid,
             '/v2/accelerator_requests',
             '/v2/accelerator_requests?limit=1&sort_dir=desc']
    for _ in range(3):
        for path in paths:
            assert _get(cloud.app, path)[:2] == _get(rpc_app, path)[:2]
    # Ours asked once per query; the API without the read model (the
    # same client) every time.
    assert (len(shows), len(lists)) == (1 + 3, 2 + 3 * 2)

    # Another client's write: announced, then asked for again.
    written = time.monotonic()
    other = cloud.conductor_api.create_arqs(admin, 'arq-answers', None)
    deadline = written + CONF.api.read_model_check_interval
    while len(_get(cloud.app, paths[1])[1]['arqs']) != 2:
        assert time.monotonic() < deadline, 'not seen once announced'
        time.sleep(0.01)

    # This process's own write: seen by its next read, whatever the
    # announcement does meanwhile.
    assert _call(cloud.app, 'DELETE', '/v2/accelerator_requests?arqs=%s'
                 % other[0]['uuid']).status_int == 204
    assert len(_get(cloud.app, paths[1])[1]['arqs']) == 1
    assert _call(cloud.app, 'DELETE', '/v2/accelerator_requests?arqs=%s'
                 % uuid).status_int == 204
    assert _get(cloud.app, paths[0])[0] == 404
