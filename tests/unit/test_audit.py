"""The CADF audit middleware (cyborg_like/api/audit.py) with the shipped
audit map, in front of a stand-in application; its events are taken from
oslo.messaging's own ``test`` notification driver.

The stand-in answers as the API does (status, JSON body); what auth_token
puts in the environ (X-User-Id, X-Project-Id, the service catalog) is set
on each request. tests/integration/test_audit.py runs the same behind the
real auth_token, Keystone and RabbitMQ.
"""

import json
import os
import uuid

from oslo_config import cfg
from oslo_messaging.notify import _impl_test
import pytest
import webob
import webob.dec
import yaml

from cyborg_like.api import audit
from cyborg_like.common import rpc
from cyborg_like.conf import api as api_opts
from cyborg_like.conf import audit as audit_opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
OPENAPI = os.path.join(ROOT, 'cyborg_like', 'api', 'openapi.yaml')
USER, PROJECT = uuid.uuid4().hex, uuid.uuid4().hex
ID = str(uuid.uuid4())
SERVICE_ID = uuid.uuid4().hex
CHANGING = ('post', 'put', 'patch', 'delete')

# Every state-changing route of openapi.yaml: the target type and action
# the audit map gives it. A route added to the API without a line here
# fails test_every_changing_route_has_its_target_and_action: give it its
# keywords (and actions) in etc/cyborg_like/api_audit_map.conf and a line
# here.
S = 'service/accelerator'
ROUTES = {
    ('post', '/v2/devices/{uuid}/disable'): (
        S + '/devices/device/disable', 'disable'),
    ('post', '/v2/devices/{uuid}/enable'): (
        S + '/devices/device/enable', 'enable'),
    ('post', '/v2/devices/{uuid}/firmware'): (
        S + '/devices/device/firmware', 'update/firmware'),
    ('post', '/v2/devices/{uuid}/mig_layout'): (
        S + '/devices/device/mig_layout', 'update/mig_layout'),
    ('patch', '/v2/deployables/{uuid}/program'): (
        S + '/deployables/deployable/program', 'update/program'),
    ('post', '/v2/attributes'): (S + '/attributes', 'create'),
    ('delete', '/v2/attributes/{uuid}'): (
        S + '/attributes/attribute', 'delete'),
    ('post', '/v2/device_profiles'): (S + '/device_profiles', 'create'),
    ('delete', '/v2/device_profiles'): (S + '/device_profiles', 'delete'),
    ('delete', '/v2/device_profiles/{uuid_or_name}'): (
        S + '/device_profiles/device_profile', 'delete'),
    ('post', '/v2/accelerator_requests'): (
        S + '/accelerator_requests', 'create'),
    ('patch', '/v2/accelerator_requests'): (
        S + '/accelerator_requests', 'update'),
    ('delete', '/v2/accelerator_requests'): (
        S + '/accelerator_requests', 'delete'),
    ('patch', '/v2/accelerator_requests/{uuid}'): (
        S + '/accelerator_requests/accelerator_request', 'update'),
    ('delete', '/v2/accelerator_requests/{uuid}'): (
        S + '/accelerator_requests/accelerator_request', 'delete'),
    ('post', '/v2/accelerator_requests/{uuid}/schedule'): (
        S + '/accelerator_requests/accelerator_request/schedule',
        'update/schedule'),
    ('post', '/v2/operations/{uuid}/cancel'): (
        S + '/operations/operation/cancel', 'update/cancel'),
    ('post', '/v2/leases'): (S + '/leases', 'create'),
    ('delete', '/v2/leases/{uuid}'): (S + '/leases/lease', 'delete'),
    ('post', '/v2/leases/{uuid}/give_back'): (
        S + '/leases/lease/give_back', 'update/give_back'),
    ('post', '/v2/rollouts'): (S + '/rollouts', 'create'),
    ('post', '/v2/rollouts/{uuid}/pause'): (
        S + '/rollouts/rollout/pause', 'update/pause'),
    ('post', '/v2/rollouts/{uuid}/resume'): (
        S + '/rollouts/rollout/resume', 'update/resume'),
    ('post', '/v2/rollouts/{uuid}/abort'): (
        S + '/rollouts/rollout/abort', 'update/abort'),
    ('post', '/v2/rollouts/{uuid}/rollback'): (
        S + '/rollouts/rollout/rollback', 'update/rollback'),
    ('patch', '/v2/hosts/{hostname}'): (S + '/hosts/host', 'update'),
    ('post', '/v2/hosts/{hostname}/driver_operations'): (
        S + '/hosts/host/driver_operations', 'create'),
    ('put', '/v2/quotas/{project_id}'): (S + '/quotas/quota', 'update'),
    ('delete', '/v2/quotas/{project_id}'): (S + '/quotas/quota', 'delete'),
    ('post', '/v2/bitstreams'): (S + '/bitstreams', 'create'),
    ('delete', '/v2/bitstreams/{uuid}'): (
        S + '/bitstreams/bitstream', 'delete'),
    ('put', '/v2/bitstreams/{uuid}/data'): (
        S + '/bitstreams/bitstream/data', 'update/upload'),
}


def _conf(auth_strategy='keystone', **audit_options):
    conf = cfg.ConfigOpts()
    api_opts.register_opts(conf)
    audit_opts.register_opts(conf)
    rpc.register_opts(conf)
    conf([], project='cyborg_like', default_config_files=[])
    conf.set_override('auth_strategy', auth_strategy, group='api')
    conf.set_override('transport_url', 'fake:/')
    conf.set_override('driver', ['test'],
                      group='oslo_messaging_notifications')
    for name, value in audit_options.items():
        conf.set_override(name, value, group='audit')
    return conf


class StandIn:
    """Answers ``status`` with ``body``; ``then`` runs first (a handler's
    audit.note)."""

    def __init__(self, status=200, body=None, then=None):
        self.status, self.body, self.then = status, body, then

    @webob.dec.wsgify
    def __call__(self, request):
        if self.then:
            self.then(request)
        response = webob.Response(status=self.status)
        if self.body is not None:
            response.json = self.body
            response.content_type = 'application/json'
        return response


def _catalog():
    return json.dumps([{
        'type': 'accelerator', 'name': 'cyborg_like', 'endpoints': [{
            'id': SERVICE_ID, 'region': 'RegionOne',
            'publicURL': 'http://api.example.org:6666/'}]}])


def _send(app, method, path, catalog=True, body=None):
    request = webob.Request.blank(path, method=method)
    request.environ.update({'HTTP_X_USER_ID': USER,
                            'HTTP_X_PROJECT_ID': PROJECT,
                            'HTTP_X_IDENTITY_STATUS': 'Confirmed',
                            'HTTP_X_AUTH_TOKEN': 'secret-token-value'})
    if catalog:
        request.environ['HTTP_X_SERVICE_CATALOG'] = _catalog()
    if body is not None:
        request.json = body
    return request.get_response(app)


def _events():
    """{event_type: [(payload, retry)]} sent since the last reset."""
    found = {}
    for _ctxt, message, priority, retry in _impl_test.NOTIFICATIONS:
        assert priority == 'INFO'
        found.setdefault(message['event_type'], []).append(
            (message['payload'], retry))
    return found


@pytest.fixture(autouse=True)
def _reset_notifications():
    _impl_test.reset()
    yield
    _impl_test.reset()


def _response_event():
    [(payload, _retry)] = _events()['audit.http.response']
    return payload


def _changing_routes():
    with open(OPENAPI) as f:
        paths = yaml.safe_load(f)['paths']
    return sorted((method, path) for path, item in paths.items()
                  for method in item if method in CHANGING)


def test_every_changing_route_has_its_target_and_action():
    assert _changing_routes() == sorted(ROUTES)
    app = audit.wrap(StandIn(), _conf())
    for (method, template), (type_uri, action) in ROUTES.items():
        path = template.replace('{uuid}', ID).replace(
            '{uuid_or_name}', ID).replace('{hostname}', ID).replace(
            '{project_id}', ID)
        for catalog in (True, False):
            _impl_test.reset()
            _send(app, method.upper(), path, catalog=catalog)
            event = _response_event()
            assert (event['target']['typeURI'], event['action']) == (
                type_uri, action), (method, path, catalog)
            named = '{' in template
            assert (event['target']['id'] == ID) == named, (method, path)


def test_an_event_says_who_did_what_to_which_and_how_it_ended():
    app = audit.wrap(StandIn(status=200), _conf())
    _send(app, 'POST', '/v2/rollouts/%s/pause' % ID)
    events = _events()
    [(request, retry)] = events['audit.http.request']
    [(response, _retry)] = events['audit.http.response']
    assert request['outcome'] == 'pending'
    assert response['id'] == request['id']
    assert response['eventType'] == 'activity'
    assert response['typeURI'] == 'http://schemas.dmtf.org/cloud/audit/1.0/event'
    assert response['action'] == 'update/pause'
    assert response['outcome'] == 'success'
    assert response['reason'] == {'reasonType': 'HTTP', 'reasonCode': '200'}
    assert response['requestPath'] == '/v2/rollouts/%s/pause' % ID
    initiator = response['initiator']
    assert (initiator['id'], initiator['project_id'], initiator['typeURI']) \
        == (USER, PROJECT, 'service/security/account/user')
    # The token is never sent whole.
    assert 'secret-token-value' not in json.dumps(response)
    target = response['target']
    assert (target['id'], target['name'], target['typeURI']) == (
        ID, 'cyborg_like', 'service/accelerator/rollouts/rollout/pause')
    # Sent with [audit] notification_retry, not forever.
    assert retry == 1


def test_a_refused_request_is_a_failure_with_its_status():
    app = audit.wrap(StandIn(status=404, body={'error_message': 'gone'}),
                     _conf())
    _send(app, 'DELETE', '/v2/leases/%s' % ID)
    event = _response_event()
    assert (event['outcome'], event['reason']['reasonCode'],
            event['action'], event['target']['id']) == (
        'failure', '404', 'delete', ID)


def test_a_create_names_what_it_created():
    made = str(uuid.uuid4())
    app = audit.wrap(StandIn(status=201, body={'uuid': made}), _conf())
    _send(app, 'POST', '/v2/leases', body={'name': 'x'})
    event = _response_event()
    assert (event['action'], event['target']['id'],
            event['target']['typeURI']) == (
        'create', made, 'service/accelerator/leases')


def test_a_create_of_several_lists_them_all():
    made = [str(uuid.uuid4()), str(uuid.uuid4())]
    app = audit.wrap(StandIn(status=201, body={
        'arqs': [{'uuid': u} for u in made]}), _conf())
    _send(app, 'POST', '/v2/accelerator_requests', body={})
    event = _response_event()
    assert event['target']['id'] == SERVICE_ID
    assert event['attachments'] == [{
        'typeURI': 'mime:application/json', 'name': 'target_ids',
        'content': made}]


def test_a_handler_notes_the_action_and_its_targets():
    arq = str(uuid.uuid4())
    app = audit.wrap(StandIn(status=202, then=lambda request: audit.note(
        request, 'update/unbind', [arq])), _conf())
    _send(app, 'PATCH', '/v2/accelerator_requests', body={arq: []})
    event = _response_event()
    assert (event['action'], event['target']['id']) == ('update/unbind',
                                                        arq)
    # The request's event went before the handler ran: the path's view.
    [(request, _r)] = _events()['audit.http.request']
    assert (request['action'], request['target']['id']) == (
        'update', SERVICE_ID)


def test_reads_are_not_audited_unless_asked():
    _send(audit.wrap(StandIn(), _conf()), 'GET', '/v2/leases/%s' % ID)
    assert _events() == {}
    _send(audit.wrap(StandIn(), _conf(ignore_req_list=[])), 'GET',
          '/v2/leases/%s' % ID)
    assert _response_event()['action'] == 'read'


@pytest.mark.parametrize('auth, enabled, audited', [
    ('keystone', None, True), ('noauth', None, False),
    ('keystone', False, False), ('noauth', True, True)])
def test_enabled_by_default_only_with_authentication(auth, enabled,
                                                     audited):
    stand_in = StandIn()
    conf = _conf(auth_strategy=auth, enabled=enabled)
    assert (audit.wrap(stand_in, conf) is not stand_in) == audited
    assert audit.enabled(conf) == audited


def test_the_shipped_map_is_found_and_another_can_be_named(tmp_path):
    assert audit.map_file(_conf()) == os.path.join(
        ROOT, 'etc', 'cyborg_like', audit.MAP_FILE)
    other = tmp_path / 'map.conf'
    other.write_text('[path_keywords]\nleases = lease\n')
    conf = _conf(audit_map_file=str(other))
    _send(audit.wrap(StandIn(), conf), 'DELETE', '/v2/leases/%s' % ID,
          catalog=False)
    assert _response_event()['target']['typeURI'] == \
        'service/accelerator/leases/lease'
