"""Bad input the declarative tests (gabbits/bad-input.yaml) cannot send:
bodies over the size limit, huge values quoted in errors, profiles made
before the accelerator bound, and a conductor that fails unexpectedly."""

import json
import urllib.error
import urllib.request

import oslo_messaging as messaging
import pytest
import webob

from cyborg_like.api import app as app_module
from cyborg_like.api import server as api_server
from cyborg_like.common import context
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi
from cyborg_like.conf import CONF
from tests import failing_conductor
from tests.functional import cloud as cloud_module

LIMIT = 4096


@pytest.fixture(scope='module')
def cloud():
    cloud = cloud_module.Cloud(overrides={
        ('oslo_middleware', 'max_request_body_size'): LIMIT,
        ('api', 'max_accelerators_per_request'): 8}).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def _request(app, method, path, body=None, **headers):
    request = webob.Request.blank(path, method=method)
    request.headers['Content-Type'] = 'application/json'
    request.headers.update(headers)
    if body is not None:
        request.body = body if isinstance(body, bytes) else json.dumps(
            body).encode()
    return request.get_response(app)


def _fault(response):
    return json.loads(response.json['error_message'])


def test_a_body_over_the_limit_is_413_in_our_error_body(cloud):
    response = _request(cloud.app, 'POST', '/v2/device_profiles', {
        'name': 'big', 'description': 'x' * LIMIT,
        'groups': [{'resources:FPGA': '1'}]})
    assert response.status_int == 413
    fault = _fault(response)
    assert fault['error_code'] == 'accel.request.too_large'
    assert str(LIMIT) in fault['faultstring']


def test_a_client_that_sends_its_whole_body_first_reads_the_413(cloud):
    """urllib writes the whole body before it reads: with the refused body
    left unread it got a broken pipe, not the 413 (issue 34)."""
    server = api_server.APIServer(cloud.app, '127.0.0.1', 0, threads=2)
    server.start()
    try:
        request = urllib.request.Request(
            'http://127.0.0.1:%d/v2/device_profiles' % server.port,
            data=b'{"name": "' + b'x' * (20 * 1024 * 1024) + b'"}',
            headers={'Content-Type': 'application/json'}, method='POST')
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        assert refused.value.code == 413
        fault = json.loads(json.loads(refused.value.read())['error_message'])
        assert fault['error_code'] == 'accel.request.too_large'
    finally:
        server.stop()


def test_a_body_of_unknown_length_is_cut_at_the_limit(cloud):
    request = webob.Request.blank('/v2/device_profiles', method='POST')
    request.headers['Content-Type'] = 'application/json'
    request.body = json.dumps({'name': 'big', 'description': 'x' * LIMIT,
                               'groups': [{'resources:FPGA': '1'}]}).encode()
    del request.headers['Content-Length']
    request.headers['Transfer-Encoding'] = 'chunked'
    request.environ['wsgi.input_terminated'] = True
    response = request.get_response(cloud.app)
    assert response.status_int == 413
    assert _fault(response)['error_code'] == 'accel.request.too_large'


def test_an_error_quotes_only_an_excerpt_of_a_huge_value(cloud):
    description = 'y' * (LIMIT - 200)
    response = _request(cloud.app, 'POST', '/v2/device_profiles', {
        'name': 'long', 'description': description,
        'groups': [{'resources:FPGA': '1'}]})
    assert response.status_int == 400
    assert 'is too long' in _fault(response)['faultstring']
    assert len(response.body) < 1000


def test_a_huge_key_is_quoted_as_an_excerpt_only(cloud):
    response = _request(cloud.app, 'POST', '/v2/device_profiles', {
        'name': 'long', 'groups': [{'z' * (LIMIT - 200): '1'}]})
    assert response.status_int == 400
    assert len(response.body) < 1500


@pytest.mark.parametrize('path,version', [
    ('/v2/device_profiles/', '2.2'),     # looked up by name from 2.2 on
    ('/v2/hosts/', '2.0'),
])
def test_a_huge_name_looked_up_is_quoted_as_an_excerpt_only(cloud, path,
                                                            version):
    name = 'n' * 6000
    response = _request(cloud.app, 'GET', path + name,
                        **{'OpenStack-API-Version': 'accelerator ' + version})
    assert response.status_int == 404
    fault = _fault(response)
    assert fault['error_code'].endswith('.not_found')
    assert 'n' * 64 + '... (6000 characters)' in fault['faultstring']
    assert len(response.body) < 1000


def test_a_profile_made_before_the_bound_creates_no_requests(cloud):
    admin = context.get_admin_context()
    # As a profile made when the bound was higher: past the API's check.
    cloud.conductor_api.create_device_profile(
        admin, 'old-huge', [{'resources:FPGA': '5'},
                            {'resources:FPGA': '5'}], None)
    response = _request(cloud.app, 'POST', '/v2/accelerator_requests',
                        {'device_profile_name': 'old-huge'})
    assert response.status_int == 400
    fault = _fault(response)
    assert fault['error_code'] == 'accel.arq.too_many_accelerators'
    assert 'asks for 10 accelerators' in fault['faultstring']
    listed = _request(cloud.app, 'GET', '/v2/accelerator_requests')
    assert listed.json['arqs'] == []
    # One group of it is within the bound.
    response = _request(cloud.app, 'POST', '/v2/accelerator_requests',
                        {'device_profile_name': 'old-huge',
                         'device_profile_group_id': 1})
    assert response.status_int == 201
    assert len(response.json['arqs']) == 5


def test_the_bound_is_configured(cloud):
    response = _request(cloud.app, 'POST', '/v2/device_profiles', {
        'name': 'nine', 'groups': [{'resources:FPGA': '9'}]})
    assert response.status_int == 400
    assert 'at most 8' in _fault(response)['faultstring']


# -- a conductor that fails unexpectedly -------------------------------------

def ConductorAPIOn(topic, timeout):
    """The API's conductor client, on another topic."""
    return rpcapi.ConductorAPI(timeout=timeout, topic=topic)


@pytest.fixture
def failing_app(cloud):
    topic = 'failing-conductor'
    server = rpc.get_server(messaging.Target(topic=topic, server='failing'),
                            [failing_conductor.FailingConductor()])
    server.start()
    try:
        yield app_module.setup_app(CONF, ConductorAPIOn(topic, 5))
    finally:
        server.stop()
        server.wait()


# On the fake transport the endpoint's exception reaches the API as it is
# (tests/integration/test_conductor_errors.py has the RemoteError of a
# real broker).
@pytest.mark.parametrize('path', ['/v2/devices', '/v2/deployables'])
def test_an_unexpected_conductor_error_is_a_clean_500(failing_app, caplog,
                                                      path):
    failing_conductor.assert_clean_500(_request(failing_app, 'GET', path),
                                       'accel.error', caplog.records)


def test_no_conductor_is_503(cloud):
    app = app_module.setup_app(CONF, ConductorAPIOn('nobody-listens', 0.5))
    response = _request(app, 'GET', '/v2/devices')
    assert response.status_int == 503
    assert _fault(response)['faultcode'] == 'Server'


@pytest.mark.parametrize('method, path', [
    ('POST', '/v2/device_profiles'),
    ('POST', '/v2/attributes'),
    ('PATCH', '/v2/accelerator_requests'),
    ('PATCH', '/v2/deployables/9d6a5d5b-2a4a-4c2e-8a3a-3b1f1f1f1f1f'
              '/program'),
])
def test_a_body_that_is_not_utf8_is_refused_before_pecan_reads_it(
        cloud, caplog, method, path):
    # pecan decodes a JSON body to find the handler's arguments; bytes
    # that are not UTF-8 make it log a traceback (and answer its own 400).
    caplog.set_level('ERROR')
    response = _request(cloud.app, method, path, b'{"name": "caf\xe9"}')
    assert response.status_int == 400
    fault = _fault(response)
    assert fault['error_code'] == 'accel.request.invalid'
    assert 'UTF-8' in fault['faultstring']
    assert not [r for r in caplog.records if r.levelname == 'ERROR'], \
        caplog.text
