"""Who may do what, with real Keystone tokens.

The API runs with ``[api] auth_strategy = keystone``: keystonemiddleware's
auth_token validates every token against the Keystone of ``keystone_cloud``
(keystone.py) and hands the API the project and roles (implied ones
included), which the policy defaults (cyborg_like/policies) judge. Each test
of the matrix makes one request with one persona's project-scoped token:

  persona   user         role (project)
  admin     admin        admin (admin): the cloud administrator
  manager   p1-manager   manager (p1)
  member    p1-member    member (p1)
  reader    p1-reader    reader (p1)
  service   nova         service (service): Nova on its own behalf
  (and in SERVICE_TOKEN_MATRIX: Nova for a user, with its service token)
  none      -            no X-Auth-Token at all
  bogus     -            a token Keystone never issued

Project p1 owns the accelerator requests the tests act on; a second project
p2 checks that one project can neither see nor touch another's requests.
One MariaDB deployment serves the whole module.
"""

import datetime
import uuid

import pytest
import requests

from cyborg_like import policies
from . import infra
from . import keystone as ks

pytestmark = pytest.mark.integration

# Expected status of every API operation for every persona (the policy
# defaults; tests/functional/gabbits/policy.yaml checks the same with noauth
# headers). 401: auth_token refuses the request before the API sees it.
MATRIX = """
operation               admin manager member reader service none bogus
devices:list              200   403    403    403    403    401  401
devices:show              200   403    403    403    403    401  401
devices:health            200   403    403    403    403    401  401
devices:disable           200   403    403    403    403    401  401
devices:enable            200   403    403    403    403    401  401
devices:firmware          400   403    403    403    403    401  401
devices:mig_layout        400   403    403    403    403    401  401
deployables:list          200   403    403    403    403    401  401
deployables:show          200   403    403    403    403    401  401
deployables:program       202   403    403    403    403    401  401
operations:list           200   403    403    403    403    401  401
operations:show           200   403    403    403    403    401  401
hosts:list                200   403    403    403    403    401  401
hosts:show                200   403    403    403    403    401  401
hosts:update              200   403    403    403    403    401  401
hosts:driver_operation    400   403    403    403    403    401  401
hosts:driver_op_force     400   403    403    403    403    401  401
operations:cancel         409   403    403    403    403    401  401
device_profiles:create    201   403    403    403    403    401  401
device_profiles:list      200   200    200    200    200    401  401
device_profiles:show      200   200    200    200    200    401  401
device_profiles:delete    204   403    403    403    403    401  401
arqs:create               201   201    201    403    201    401  401
arqs:list                 200   200    200    200    200    401  401
arqs:show                 200   200    200    200    200    401  401
arqs:bind                 202   403    403    403    202    401  401
arqs:unbind               202   403    403    403    202    401  401
arqs:unbind_bound         403   403    403    403    202    401  401
arqs:delete               204   204    204    403    204    401  401
arqs:delete_bound         403   403    403    403    204    401  401
arqs:bind_project_id      202   403    403    403    403    401  401
arqs:schedule             202   202    202    403    202    401  401
attributes:list           200   403    403    403    403    401  401
attributes:show           200   403    403    403    403    401  401
attributes:create         201   403    403    403    403    401  401
attributes:delete         204   403    403    403    403    401  401
quotas:show               200   200    200    200    403    401  401
quotas:update             200   403    403    403    403    401  401
quotas:delete             204   403    403    403    403    401  401
bitstreams:create         201   403    403    403    403    401  401
bitstreams:upload         200   403    403    403    403    401  401
bitstreams:list           200   403    403    403    403    401  401
bitstreams:show           200   403    403    403    403    401  401
bitstreams:download       200   403    403    403    200    401  401
bitstreams:delete         204   403    403    403    403    401  401
availability:get          200   403    403    403    200    401  401
leases:create             201   201    201    403    403    401  401
leases:list               200   200    200    200    403    401  401
changes:list              200   200    200    200    403    401  401
usage:show                200   200    200    200    403    401  401
leases:show               200   200    200    200    403    401  401
leases:give_back          200   200    200    403    403    401  401
leases:revoke             200   403    403    403    403    401  401
leases:preempt            201   409    409    403    403    401  401
rollouts:create           200   403    403    403    403    401  401
rollouts:list             200   403    403    403    403    401  401
rollouts:pause            404   403    403    403    403    401  401
rollouts:resume           404   403    403    403    403    401  401
rollouts:abort            404   403    403    403    403    401  401
rollouts:rollback         404   403    403    403    403    401  401
"""

# The policy rule each operation of the matrix stands for: every rule the
# API registers must be tried by at least one (test_matrix_covers_every_rule).
RULES = {
    'devices:list': 'cyborg:device:get_all',
    'devices:show': 'cyborg:device:get_one',
    'devices:health': 'cyborg:device:get_one',
    'devices:disable': 'cyborg:device:disable',
    'devices:enable': 'cyborg:device:enable',
    'devices:firmware': 'cyborg:device:firmware',
    'devices:mig_layout': 'cyborg:device:mig_layout',
    'deployables:list': 'cyborg:deployable:get_all',
    'deployables:show': 'cyborg:deployable:get_one',
    'deployables:program': 'cyborg:deployable:program',
    'operations:list': 'cyborg:operation:get',
    'operations:show': 'cyborg:operation:get',
    'operations:cancel': 'cyborg:operation:cancel',
    'availability:get': 'cyborg:availability:get',
    'hosts:list': 'cyborg:host:get_all',
    'hosts:show': 'cyborg:host:get_one',
    'hosts:update': 'cyborg:host:update',
    'hosts:driver_operation': 'cyborg:host:driver_operation:create',
    'hosts:driver_op_force': 'cyborg:host:driver_operation:force',
    'device_profiles:create': 'cyborg:device_profile:create',
    'device_profiles:list': 'cyborg:device_profile:get_all',
    'device_profiles:show': 'cyborg:device_profile:get_one',
    'device_profiles:delete': 'cyborg:device_profile:delete',
    'arqs:create': 'cyborg:arq:create',
    'arqs:list': 'cyborg:arq:get_all',
    'arqs:show': 'cyborg:arq:get_one',
    'arqs:bind': 'cyborg:arq:update',
    'arqs:unbind': 'cyborg:arq:update',
    'arqs:unbind_bound': 'cyborg:arq:unbind_bound',
    'arqs:bind_project_id': 'cyborg:arq:bind_project_id',
    'arqs:delete': 'cyborg:arq:delete',
    'arqs:delete_bound': 'cyborg:arq:delete_bound',
    'arqs:schedule': 'cyborg:arq:schedule',
    'attributes:list': 'cyborg:attribute:get_all',
    'attributes:show': 'cyborg:attribute:get_one',
    'attributes:create': 'cyborg:attribute:create',
    'attributes:delete': 'cyborg:attribute:delete',
    'quotas:show': 'cyborg:quota:get',
    'quotas:update': 'cyborg:quota:update',
    'quotas:delete': 'cyborg:quota:delete',
    'bitstreams:create': 'cyborg:bitstream:create',
    'bitstreams:upload': 'cyborg:bitstream:upload',
    'bitstreams:list': 'cyborg:bitstream:get_all',
    'bitstreams:show': 'cyborg:bitstream:get_one',
    'bitstreams:download': 'cyborg:bitstream:download',
    'bitstreams:delete': 'cyborg:bitstream:delete',
    'leases:create': 'cyborg:lease:create',
    'leases:list': 'cyborg:lease:get',
    'leases:show': 'cyborg:lease:get',
    'leases:give_back': 'cyborg:lease:give_back',
    'leases:revoke': 'cyborg:lease:revoke',
    'leases:preempt': 'cyborg:lease:preempt',
    'changes:list': 'cyborg:change:get',
    'usage:show': 'cyborg:usage:get',
    'rollouts:create': 'cyborg:rollout:create',
    'rollouts:list': 'cyborg:rollout:get',
    'rollouts:pause': 'cyborg:rollout:pause',
    'rollouts:resume': 'cyborg:rollout:resume',
    'rollouts:abort': 'cyborg:rollout:abort',
    'rollouts:rollback': 'cyborg:rollout:rollback',
}
IMAGE_BYTES = b'GBS region image for the RBAC matrix\n'


def _parse(table):
    lines = [line.split() for line in table.strip().splitlines()]
    personas = lines[0][1:]
    return personas, {row[0]: dict(zip(personas, map(int, row[1:])))
                      for row in lines[1:]}


PERSONAS, EXPECTED = _parse(MATRIX)
USERS = {'admin': 'admin', 'manager': 'p1-manager', 'member': 'p1-member',
         'reader': 'p1-reader', 'service': 'nova'}
BOGUS_TOKEN = 'gAAAAABogus' + uuid.uuid4().hex

# Nova calls Cyborg with the user's token and, as X-Service-Token, a token
# of its own user (service role): auth_token validates both and passes the
# service token's roles on as X-Service-Roles (oslo.context's
# service_roles). Expected status of the operations only Nova may do, for
# callers who carry p1-member's token:
#   nova-for-member  p1-member's token + Nova's service token
#   member-alone     p1-member's token only
#   member-forged    p1-member's token + forged X-Service-Roles/X-Roles
#                    headers (auth_token removes them)
#   member-as-service p1-member's token as its own service token: no
#                    service role, refused (service_token_roles_required)
SERVICE_TOKEN_MATRIX = """
operation         nova-for-member member-alone member-forged member-as-service
arqs:bind                202          403          403           401
arqs:unbind              202          403          403           401
arqs:unbind_bound        202          403          403           401
arqs:delete_bound        204          403          403           401
arqs:list                200          200          200           401
devices:list             403          403          403           401
"""
NOVA_CALLERS = {
    'nova-for-member': lambda env: {
        'X-Auth-Token': env.token('member'),
        'X-Service-Token': env.token('service')},
    'member-alone': lambda env: {'X-Auth-Token': env.token('member')},
    'member-forged': lambda env: {
        'X-Auth-Token': env.token('member'),
        'X-Service-Roles': 'service', 'X-Roles': 'admin,service',
        'X-Service-Identity-Status': 'Confirmed'},
    'member-as-service': lambda env: {
        'X-Auth-Token': env.token('member'),
        'X-Service-Token': env.token('member')},
}
NOVA_PERSONAS, NOVA_EXPECTED = _parse(SERVICE_TOKEN_MATRIX)
FPGA_PROFILE = 'rbac-fpga'


class Env:
    """The deployment, Keystone, and the records the operations act on."""

    def __init__(self, dep, keystone):
        self.dep = dep
        self.keystone = keystone
        self.p1 = keystone.project_ids['p1']
        self.p2 = keystone.project_ids['p2']

    def token(self, who):
        if who == 'none':
            return None
        if who == 'bogus':
            return BOGUS_TOKEN
        return self.keystone.token(USERS.get(who, who))

    def call(self, method, path, who, **kwargs):
        if who in NOVA_CALLERS:
            headers = NOVA_CALLERS[who](self)
            headers.update(kwargs.pop('headers', {}))
            return self.dep.request(method, path, None, headers=headers,
                                    **kwargs)
        return self.dep.request(method, path, self.token(who), **kwargs)

    def ok(self, method, path, who='admin', status=200, **kwargs):
        """A request that must succeed with ``status``; its JSON."""
        resp = self.call(method, path, who, **kwargs)
        assert resp.status_code == status, (method, path, who,
                                            resp.status_code, resp.text)
        return resp.json() if resp.content else None

    # ARQs of project p1 (made by p1-member), in every state needed.
    def new_arq(self, who='p1-member'):
        return self.ok('POST', '/v2/accelerator_requests', who, status=201,
                       json={'device_profile_name': FPGA_PROFILE}
                       )['arqs'][0]['uuid']

    def bind_patch(self, arq):
        return {arq: [
            {'op': 'add', 'path': '/hostname', 'value': self.dep.host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': self.fpga_rp_uuid},
            {'op': 'add', 'path': '/instance_uuid',
             'value': str(uuid.uuid4())}]}

    def wait_arq_state(self, arq, *wanted):
        return infra.wait_for(
            lambda: (lambda a: a if a['state'] in wanted else None)(
                self.ok('GET', '/v2/accelerator_requests/%s' % arq)),
            message='ARQ %s never reached %s' % (arq, wanted))

    def bound_arq(self):
        arq = self.new_arq()
        self.ok('PATCH', '/v2/accelerator_requests', 'nova',
                status=202, json=self.bind_patch(arq))
        found = self.wait_arq_state(arq, 'Bound', 'BindFailed')
        assert found['state'] == 'Bound', found
        return arq

    def delete_arqs(self, *uuids):
        """Clean-up as Nova (who sees every project's, and alone may
        delete Bound requests)."""
        uuids = [u for u in uuids if u]
        if uuids:
            self.ok('DELETE', '/v2/accelerator_requests?arqs=%s'
                    % ','.join(uuids), who='service', status=204)

    def new_image(self):
        """A queued catalog image (its data not uploaded yet)."""
        return self.ok('POST', '/v2/bitstreams', status=201, json={
            'name': 'rbac-%s' % uuid.uuid4().hex[:8], 'kind': 'bitstream',
            'vendor': '0x8086'})['uuid']

    def new_lease(self, days_ahead, who='p1-member'):
        """A lease of the GPU for a night ``days_ahead`` days from now
        (inside the lease horizon, far from any binding of the tests)."""
        night = datetime.datetime.now(datetime.timezone.utc) \
            + datetime.timedelta(days=days_ahead)
        return self.call('POST', '/v2/leases', who, json={
            'name': 'rbac-%s' % uuid.uuid4().hex[:8],
            'devices': [self.gpu_device], 'timezone': 'UTC',
            'start': night.strftime('%Y-%m-%dT20:00'),
            'end': (night + datetime.timedelta(days=1)).strftime(
                '%Y-%m-%dT06:00')})

    def revoke(self, lease):
        self.ok('DELETE', '/v2/leases/%s' % lease)

    def wait_operation(self, operation):
        return infra.wait_for(
            lambda: (lambda o: o if o['state'] in ('succeeded', 'failed')
                     else None)(self.ok('GET', '/v2/operations/%s'
                                        % operation)),
            message='Operation %s never ended' % operation)


@pytest.fixture(scope='module')
def deployment(keystone_cloud, tmp_path_factory):
    """Replaces conftest's: one deployment, on MariaDB, authenticating with
    Keystone (under this name its logs join the report of a failed test).
    """
    workdir = str(tmp_path_factory.mktemp('keystone-rbac'))
    with ks.keystone_deployment('mariadb', workdir, keystone_cloud) as dep:
        dep.wait_host_up()
        yield dep


@pytest.fixture(scope='module')
def env(deployment, keystone_cloud):
    e = Env(deployment, keystone_cloud)
    devices = e.ok('GET', '/v2/devices')['devices']
    e.fpga_device = next(d['uuid'] for d in devices if d['type'] == 'FPGA')
    e.gpu_device = next(d['uuid'] for d in devices if d['type'] == 'GPU')
    deployables = {d['name']: d for d in
                   e.ok('GET', '/v2/deployables')['deployables']}
    e.region0 = deployables['region0']['uuid']
    e.fpga_rp_uuid = deployables['region1']['rp_uuid']
    assert e.fpga_rp_uuid, deployables['region1']
    attributes = e.ok('GET', '/v2/attributes')['attributes']
    e.attribute = attributes[0]['uuid']
    e.gpu_deployable_id = next(
        a['deployable_id'] for a in attributes
        if a['key'] == 'rc' and a['value'] == 'PGPU')
    e.profile = e.ok('POST', '/v2/device_profiles', status=201, json={
        'name': FPGA_PROFILE,
        'groups': [{'resources:FPGA': '1'}]})['uuid']
    started = e.ok('PATCH', '/v2/deployables/%s/program' % e.region0,
                   status=202, json=[{'op': 'replace',
                                      'path': '/bitstream_id',
                                      'value': 'bs-nowhere'}])
    e.operation = started['operation']['uuid']
    e.wait_operation(e.operation)
    e.p1_arq = e.new_arq()
    e.image = e.new_image()
    e.ok('PUT', '/v2/bitstreams/%s/data' % e.image, data=IMAGE_BYTES,
         headers={'Content-Type': 'application/octet-stream'})
    resp = e.new_lease(days_ahead=20)
    assert resp.status_code == 201, resp.text
    e.lease = resp.json()['uuid']
    yield e
    e.revoke(e.lease)


# --- The operations of the matrix: each makes its one request as ``who``
# and puts back what a successful request changed.

def _devices_disable(env, who):
    resp = env.call('POST', '/v2/devices/%s/disable' % env.gpu_device, who)
    env.ok('POST', '/v2/devices/%s/enable' % env.gpu_device)
    return resp


def _devices_enable(env, who):
    env.ok('POST', '/v2/devices/%s/disable' % env.gpu_device)
    try:
        return env.call('POST', '/v2/devices/%s/enable' % env.gpu_device,
                        who)
    finally:
        env.ok('POST', '/v2/devices/%s/enable' % env.gpu_device)


def _deployables_program(env, who):
    resp = env.call('PATCH', '/v2/deployables/%s/program' % env.region0, who,
                    json=[{'op': 'replace', 'path': '/bitstream_id',
                           'value': 'bs-nowhere'}])
    if resp.status_code == 202:
        env.wait_operation(resp.json()['operation']['uuid'])
    return resp


def _profiles_create(env, who):
    resp = env.call('POST', '/v2/device_profiles', who, json={
        'name': 'rbac-%s' % uuid.uuid4().hex[:8],
        'groups': [{'resources:PGPU': '1'}]})
    if resp.status_code == 201:
        env.ok('DELETE', '/v2/device_profiles/%s' % resp.json()['uuid'],
               status=204)
    return resp


def _profiles_delete(env, who):
    profile = env.ok('POST', '/v2/device_profiles', status=201, json={
        'name': 'rbac-%s' % uuid.uuid4().hex[:8],
        'groups': [{'resources:PGPU': '1'}]})['uuid']
    resp = env.call('DELETE', '/v2/device_profiles/%s' % profile, who)
    if resp.status_code != 204:
        env.ok('DELETE', '/v2/device_profiles/%s' % profile, status=204)
    return resp


def _arqs_create(env, who):
    resp = env.call('POST', '/v2/accelerator_requests', who,
                    json={'device_profile_name': FPGA_PROFILE})
    if resp.status_code == 201:
        env.delete_arqs(*[a['uuid'] for a in resp.json()['arqs']])
    return resp


def _arqs_bind(env, who):
    arq = env.new_arq()
    try:
        resp = env.call('PATCH', '/v2/accelerator_requests', who,
                        json=env.bind_patch(arq))
        if resp.status_code == 202:
            found = env.wait_arq_state(arq, 'Bound', 'BindFailed')
            assert found['state'] == 'Bound', found
        return resp
    finally:
        env.delete_arqs(arq)


def _arqs_schedule(env, who):
    """Standalone scheduling of a p1 request: its members, Nova (Ironic)
    and admins; the conductor picks the region."""
    arq = env.new_arq()
    try:
        resp = env.call('POST', '/v2/accelerator_requests/%s/schedule' % arq,
                        who, json={'instance_uuid': str(uuid.uuid4())})
        if resp.status_code == 202:
            found = env.wait_arq_state(arq, 'Bound', 'BindFailed')
            assert found['state'] == 'Bound', found
        return resp
    finally:
        env.delete_arqs(arq)


def _unbind(env, who, arq):
    return env.call('PATCH', '/v2/accelerator_requests', who,
                    json={arq: [{'op': 'remove', 'path': '/hostname'},
                                {'op': 'remove', 'path': '/device_rp_uuid'},
                                {'op': 'remove', 'path': '/instance_uuid'}]})


def _arqs_unbind(env, who):
    """An unbind of a request that holds no device: cyborg:arq:update."""
    arq = env.new_arq()
    try:
        resp = _unbind(env, who, arq)
        state = env.ok('GET', '/v2/accelerator_requests/%s' % arq)['state']
        assert state == 'Initial'
        return resp
    finally:
        env.delete_arqs(arq)


def _arqs_unbind_bound(env, who):
    """Taking a device from a guest: Nova only, an admin too needs its
    service token (cyborg:arq:unbind_bound), in Cyborg's words."""
    arq = env.bound_arq()
    try:
        resp = _unbind(env, who, arq)
        state = env.ok('GET', '/v2/accelerator_requests/%s' % arq)['state']
        assert state == ('Unbound' if resp.status_code == 202 else 'Bound')
        if resp.status_code == 403 and who == 'admin':
            assert 'requires a service token' in resp.text, resp.text
        return resp
    finally:
        env.delete_arqs(arq)


def _arqs_delete(env, who):
    arq = env.new_arq()
    resp = env.call('DELETE', '/v2/accelerator_requests?arqs=%s' % arq, who)
    if resp.status_code != 204:
        env.delete_arqs(arq)
    return resp


def _arqs_delete_bound(env, who):
    arq = env.bound_arq()
    resp = env.call('DELETE', '/v2/accelerator_requests?arqs=%s' % arq, who)
    if resp.status_code != 204:
        assert env.ok('GET', '/v2/accelerator_requests/%s' % arq)[
            'state'] == 'Bound'
        if who == 'admin':
            assert 'requires a service token' in resp.text, resp.text
        env.delete_arqs(arq)
    return resp


def _attributes_create(env, who):
    resp = env.call('POST', '/v2/attributes', who, json={
        'deployable_id': env.gpu_deployable_id, 'key': 'rbac_test',
        'value': 'x'})
    if resp.status_code == 201:
        env.ok('DELETE', '/v2/attributes/%s' % resp.json()['uuid'],
               status=204)
    return resp


def _attributes_delete(env, who):
    attribute = env.ok('POST', '/v2/attributes', status=201, json={
        'deployable_id': env.gpu_deployable_id, 'key': 'rbac_test',
        'value': 'x'})['uuid']
    resp = env.call('DELETE', '/v2/attributes/%s' % attribute, who)
    if resp.status_code != 204:
        env.ok('DELETE', '/v2/attributes/%s' % attribute, status=204)
    return resp


def _devices_firmware(env, who):
    # Policy first: an admin's request without an image is then invalid
    # (a valid one would drain the device and flash it).
    return env.call('POST', '/v2/devices/%s/firmware' % env.fpga_device, who,
                    json={})


def _devices_mig_layout(env, who):
    # As for firmware: policy first, then the body (a valid one would
    # drain the GPU).
    return env.call('POST', '/v2/devices/%s/mig_layout' % env.gpu_device,
                    who, json={})


def _arqs_bind_project_id(env, who):
    """Bind a p1 request into p2 (an admin moving it, microversion 2.1)."""
    arq = env.new_arq()
    try:
        patch = env.bind_patch(arq)
        patch[arq].append({'op': 'add', 'path': '/project_id',
                           'value': env.p2})
        resp = env.call('PATCH', '/v2/accelerator_requests', who, json=patch)
        found = env.ok('GET', '/v2/accelerator_requests/%s' % arq)
        if resp.status_code == 202:
            found = env.wait_arq_state(arq, 'Bound', 'BindFailed')
            assert (found['state'], found['project_id']) == (
                'Bound', env.p2), found
        else:
            assert (found['state'], found['project_id']) == (
                'Initial', env.p1), found
        return resp
    finally:
        env.delete_arqs(arq)


def _bitstreams_create(env, who):
    resp = env.call('POST', '/v2/bitstreams', who, json={
        'name': 'rbac-created', 'kind': 'bitstream', 'vendor': '0x8086'})
    if resp.status_code == 201:
        env.ok('DELETE', '/v2/bitstreams/%s' % resp.json()['uuid'],
               status=204)
    return resp


def _bitstreams_upload(env, who):
    image = env.new_image()
    try:
        resp = env.call('PUT', '/v2/bitstreams/%s/data' % image, who,
                        data=IMAGE_BYTES, headers={
                            'Content-Type': 'application/octet-stream'})
        status = env.ok('GET', '/v2/bitstreams/%s' % image)['status']
        assert status == ('active' if resp.status_code == 200 else 'queued')
        return resp
    finally:
        env.ok('DELETE', '/v2/bitstreams/%s' % image, status=204)


def _bitstreams_download(env, who):
    resp = env.call('GET', '/v2/bitstreams/%s/data' % env.image, who)
    if resp.status_code == 200:
        assert resp.content == IMAGE_BYTES
    return resp


def _bitstreams_delete(env, who):
    image = env.new_image()
    resp = env.call('DELETE', '/v2/bitstreams/%s' % image, who)
    if resp.status_code != 204:
        env.ok('DELETE', '/v2/bitstreams/%s' % image, status=204)
    return resp


def _leases_create(env, who):
    resp = env.new_lease(days_ahead=18, who=who)
    if resp.status_code == 201:
        env.revoke(resp.json()['uuid'])
    return resp


def _lease_ended(method, path, days_ahead):
    """Ending a fresh p1 lease with ``method`` on ``path`` (give back,
    revoke); the admin revokes it when ``who`` may not."""
    def operation(env, who):
        made = env.new_lease(days_ahead=days_ahead)
        assert made.status_code == 201, made.text
        lease = made.json()['uuid']
        resp = env.call(method, path % lease, who)
        if resp.status_code != 200:
            env.revoke(lease)
        return resp
    return operation


def _leases_preempt(env, who):
    """A lease of the FPGA while p2's VM holds it: only the admin's
    (cyborg:lease:preempt) is granted; p1's members are refused (409)
    with nothing of p2 in the answer."""
    theirs = env.new_arq('p2-member')
    try:
        env.ok('PATCH', '/v2/accelerator_requests', 'nova', status=202,
               json=env.bind_patch(theirs))
        held = env.wait_arq_state(theirs, 'Bound', 'BindFailed')
        assert held['state'] == 'Bound', held
        night = datetime.datetime.now(datetime.timezone.utc) \
            + datetime.timedelta(days=12)
        resp = env.call('POST', '/v2/leases', who, json={
            'devices': [env.fpga_device], 'timezone': 'UTC',
            'start': night.strftime('%Y-%m-%dT20:00'),
            'end': night.strftime('%Y-%m-%dT23:00')})
        if resp.status_code == 201:
            env.revoke(resp.json()['uuid'])
        if resp.status_code == 409:
            for secret in (theirs, held['instance_uuid'], env.p2):
                assert secret not in resp.text, resp.text
        return resp
    finally:
        env.delete_arqs(theirs)


def _quotas_update(env, who):
    """p1 unlimited in FPGAs (as without a limit), removed again."""
    path = '/v2/quotas/%s' % env.p1
    resp = env.call('PUT', path, who, json={'limits': {'FPGA': -1}})
    if resp.status_code == 200:
        assert env.call('DELETE', path, 'admin').status_code == 204
    return resp


def _rollouts_create(env, who):
    """A dry run: the waves the image would take, nothing touched."""
    return env.call('POST', '/v2/rollouts', who, json={
        'kind': 'bitstream', 'image': env.image, 'dry_run': True})


def _rollout_action(action):
    # No rollout of this uuid: policy answers first, then 404 for those
    # it lets through (a real rollout would program the test's regions).
    return lambda env, who: env.call(
        'POST', '/v2/rollouts/%s/%s' % (uuid.uuid4(), action), who)


def _get(path):
    return lambda env, who: env.call('GET', path.format(env=env), who)


OPERATIONS = {
    'devices:list': _get('/v2/devices'),
    'devices:show': _get('/v2/devices/{env.fpga_device}'),
    'devices:health': _get('/v2/devices/{env.fpga_device}/health'),
    'devices:disable': _devices_disable,
    'devices:enable': _devices_enable,
    'deployables:list': _get('/v2/deployables'),
    'deployables:show': _get('/v2/deployables/{env.region0}'),
    'deployables:program': _deployables_program,
    'operations:list': _get('/v2/operations'),
    'operations:show': _get('/v2/operations/{env.operation}'),
    'availability:get': _get('/v2/availability'),
    'hosts:list': _get('/v2/hosts'),
    'hosts:show': _get('/v2/hosts/{env.dep.host}'),
    'hosts:update': lambda env, who: env.call(
        'PATCH', '/v2/hosts/%s' % env.dep.host, who,
        json={'labels': {'rbac': who}}),
    # Policy first: an admin's request without a family is then invalid
    # (a valid one would change the host's drivers).
    'hosts:driver_operation': lambda env, who: env.call(
        'POST', '/v2/hosts/%s/driver_operations' % env.dep.host, who,
        json={'action': 'verify'}),
    # A programming operation: not a driver operation, not cancellable.
    'hosts:driver_op_force': lambda env, who: env.call(
        'POST', '/v2/hosts/%s/driver_operations' % env.dep.host, who,
        json={'action': 'verify', 'force': True}),
    'operations:cancel': lambda env, who: env.call(
        'POST', '/v2/operations/%s/cancel' % env.operation, who),
    'device_profiles:create': _profiles_create,
    'device_profiles:list': _get('/v2/device_profiles'),
    'device_profiles:show': _get('/v2/device_profiles/{env.profile}'),
    'device_profiles:delete': _profiles_delete,
    'arqs:create': _arqs_create,
    'arqs:list': _get('/v2/accelerator_requests'),
    'arqs:show': _get('/v2/accelerator_requests/{env.p1_arq}'),
    'arqs:bind': _arqs_bind,
    'arqs:unbind': _arqs_unbind,
    'arqs:unbind_bound': _arqs_unbind_bound,
    'arqs:delete': _arqs_delete,
    'arqs:delete_bound': _arqs_delete_bound,
    'arqs:schedule': _arqs_schedule,
    'attributes:list': _get('/v2/attributes'),
    'attributes:show': _get('/v2/attributes/{env.attribute}'),
    'attributes:create': _attributes_create,
    'attributes:delete': _attributes_delete,
    'quotas:show': _get('/v2/quotas/{env.p1}'),
    'quotas:update': _quotas_update,
    'quotas:delete': lambda env, who: env.call(
        'DELETE', '/v2/quotas/%s' % env.p1, who),
    'devices:firmware': _devices_firmware,
    'devices:mig_layout': _devices_mig_layout,
    'arqs:bind_project_id': _arqs_bind_project_id,
    'bitstreams:create': _bitstreams_create,
    'bitstreams:upload': _bitstreams_upload,
    'bitstreams:list': _get('/v2/bitstreams'),
    'bitstreams:show': _get('/v2/bitstreams/{env.image}'),
    'bitstreams:download': _bitstreams_download,
    'bitstreams:delete': _bitstreams_delete,
    'leases:create': _leases_create,
    'leases:list': _get('/v2/leases'),
    'changes:list': _get('/v2/changes'),
    'usage:show': _get('/v2/usage?project_id={env.p1}'),
    'leases:show': _get('/v2/leases/{env.lease}'),
    'leases:give_back': _lease_ended('POST', '/v2/leases/%s/give_back', 16),
    'leases:revoke': _lease_ended('DELETE', '/v2/leases/%s', 14),
    'leases:preempt': _leases_preempt,
    'rollouts:create': _rollouts_create,
    'rollouts:list': _get('/v2/rollouts'),
    'rollouts:pause': _rollout_action('pause'),
    'rollouts:resume': _rollout_action('resume'),
    'rollouts:abort': _rollout_action('abort'),
    'rollouts:rollback': _rollout_action('rollback'),
}


def test_matrix_covers_every_operation():
    assert sorted(OPERATIONS) == sorted(EXPECTED) == sorted(RULES)


def _assert_refused_by_policy(resp):
    """A policy refusal: the rule named, or, where only Nova may take a
    device from a guest, Cyborg's words (its clients match on them)."""
    assert ('Policy' in resp.text
            or 'requires a service token' in resp.text), resp.text


def test_matrix_covers_every_rule():
    registered = {r.name for r in policies.list_rules() if ':' in r.name}
    assert set(RULES.values()) == registered


@pytest.mark.parametrize('who', PERSONAS)
@pytest.mark.parametrize('operation', list(EXPECTED))
def test_policy(env, operation, who):
    resp = OPERATIONS[operation](env, who)
    expected = EXPECTED[operation][who]
    assert resp.status_code == expected, (
        '%s as %s: expected %d, got %d %s' % (
            operation, who, expected, resp.status_code, resp.text))
    if expected == 403:
        _assert_refused_by_policy(resp)
    if expected == 401:
        # Keystone's answer, with where to get a token.
        assert resp.headers.get('WWW-Authenticate') == (
            'Keystone uri="%s"' % env.keystone.auth_url), resp.headers


@pytest.mark.parametrize('who', NOVA_PERSONAS)
@pytest.mark.parametrize('operation', list(NOVA_EXPECTED))
def test_nova_with_a_service_token(env, operation, who):
    """Only Nova binds, unbinds and deletes bound requests: with its own
    token (the matrix above) or a user's plus its service token; never a
    member who merely claims the service role in headers."""
    resp = OPERATIONS[operation](env, who)
    expected = NOVA_EXPECTED[operation][who]
    assert resp.status_code == expected, (
        '%s as %s: expected %d, got %d %s' % (
            operation, who, expected, resp.status_code, resp.text))
    if expected == 403:
        _assert_refused_by_policy(resp)


def test_nova_for_a_member_sees_every_project(env):
    p2_arq = env.new_arq('p2-member')
    try:
        seen = {a['uuid'] for a in env.ok(
            'GET', '/v2/accelerator_requests', 'nova-for-member')['arqs']}
        assert p2_arq in seen
        assert p2_arq not in {a['uuid'] for a in env.ok(
            'GET', '/v2/accelerator_requests', 'member-forged')['arqs']}
    finally:
        env.delete_arqs(p2_arq)


# --- One project's accelerator requests are not another's.

def test_p2_member_cannot_see_or_touch_p1_arqs(env):
    arq = env.bound_arq()
    try:
        listed = env.ok('GET', '/v2/accelerator_requests',
                        'p2-member')['arqs']
        assert arq not in {a['uuid'] for a in listed}
        path = '/v2/accelerator_requests'
        assert env.call('GET', '%s/%s' % (path, arq),
                        'p2-member').status_code == 404
        # Only Nova unbinds, whatever the project.
        assert env.call('PATCH', path, 'p2-member', json={arq: [
            {'op': 'remove', 'path': '/hostname'}]}).status_code == 403
        assert env.call('DELETE', '%s?arqs=%s' % (path, arq),
                        'p2-member').status_code == 404
        # Nothing changed: still p1's, still bound.
        found = env.ok('GET', '%s/%s' % (path, arq), 'p1-reader')
        assert (found['state'], found['project_id']) == ('Bound', env.p1)
    finally:
        env.delete_arqs(arq)
    unbound = env.new_arq()
    try:
        assert env.call('PATCH', path, 'p2-member',
                        json=env.bind_patch(unbound)).status_code == 403
        assert env.ok('GET', '%s/%s' % (path, unbound))['state'] == 'Initial'
    finally:
        env.delete_arqs(unbound)


def test_each_project_lists_only_its_own_and_nova_sees_all(env):
    p1_arq = env.new_arq('p1-member')
    p2_arq = env.new_arq('p2-member')
    try:
        def listed(who):
            return {a['uuid']: a['project_id'] for a in env.ok(
                'GET', '/v2/accelerator_requests', who)['arqs']}
        for who in ('p1-member', 'p1-reader', 'p1-manager'):
            seen = listed(who)
            assert p1_arq in seen and p2_arq not in seen, (who, seen)
            assert set(seen.values()) == {env.p1}, (who, seen)
        seen = listed('p2-member')
        assert set(seen) == {p2_arq}, seen
        for who in ('nova', 'admin'):
            seen = listed(who)
            assert seen[p1_arq] == env.p1 and seen[p2_arq] == env.p2, seen
        assert env.ok('GET', '/v2/accelerator_requests/%s' % p2_arq,
                      'nova')['project_id'] == env.p2
    finally:
        env.delete_arqs(p1_arq, p2_arq)


@pytest.mark.parametrize('who', ['nova', 'admin'])
def test_binding_by_nova_or_admin_keeps_the_owner(env, who):
    """Nova (or an admin moving an instance) binds a project's request:
    it stays the project's, visible to it and counted in its quota."""
    arq = env.new_arq('p1-member')
    try:
        env.ok('PATCH', '/v2/accelerator_requests', who, status=202,
               json=env.bind_patch(arq))
        assert env.wait_arq_state(arq, 'Bound', 'BindFailed')[
            'state'] == 'Bound'
        found = env.ok('GET', '/v2/accelerator_requests/%s' % arq,
                       'p1-member')
        assert found['project_id'] == env.p1, found
        # Its owner cannot delete it while bound; Nova can.
        env.ok('DELETE', '/v2/accelerator_requests?arqs=%s' % arq,
               'p1-member', status=403)
        env.ok('DELETE', '/v2/accelerator_requests?arqs=%s' % arq,
               'nova', status=204)
        arq = None
    finally:
        env.delete_arqs(arq)


def test_quota_of_another_project_is_refused(env):
    for who, project in (('p1-reader', env.p2), ('p2-member', env.p1),
                         ('p1-manager', env.p2)):
        resp = env.call('GET', '/v2/quotas/%s' % project, who)
        assert resp.status_code == 403, (who, resp.status_code, resp.text)
    assert env.ok('GET', '/v2/quotas/%s' % env.p2)['quota'][
        'project_id'] == env.p2


def _token(keystone, scope, who='admin'):
    resp = requests.post(keystone.auth_url + '/auth/tokens', json={
        'auth': {'identity': {'methods': ['password'], 'password': {
            'user': {'name': who, 'domain': {'id': 'default'},
                     'password': keystone.password(who)}}},
            **scope}}, timeout=ks.HTTP_TIMEOUT)
    assert resp.status_code == 201, resp.text
    return resp.headers['X-Subject-Token']


@pytest.mark.parametrize('scope', ['unscoped', 'system'])
def test_tokens_not_scoped_to_a_project_are_refused(env, scope):
    """Every rule is project scoped (enforce_scope): a valid token without
    a project passes auth_token and is refused by the policy, even the
    cloud admin's."""
    token = _token(env.keystone, {
        'unscoped': {},
        'system': {'scope': {'system': {'all': True}}}}[scope])
    for path in ('/v2/devices', '/v2/accelerator_requests',
                 '/v2/device_profiles'):
        resp = env.dep.request('GET', path, token)
        assert resp.status_code == 403, (path, resp.status_code, resp.text)
