"""Accelerator quotas from Keystone's unified limits (oslo.limit).

The conductor runs with ``[quota] driver = unified_limits`` and reads, with
the system-reader ``cyborg`` user of ``[oslo_limit]``, the limits of the
accelerator endpoint registered in the Keystone of ``keystone_cloud``
(keystone.py): the registered limit ``class:FPGA`` = 2 applies to every
project, p1 has its own project limit of 3. Usage is counted in our
database, so concurrent requests can never take more than the limit. The
callers are the projects' members, with real tokens.
"""

import concurrent.futures
import json
import threading

import pytest
import sqlalchemy as sa

from . import keystone as ks

pytestmark = pytest.mark.integration

PROFILE = 'limits-fpga'
PROFILE_TWO = 'limits-two-fpgas'
ARQS = '/v2/accelerator_requests'


class Env:
    def __init__(self, dep, keystone):
        self.dep = dep
        self.keystone = keystone

    def call(self, method, path, user, **kwargs):
        return self.dep.request(method, path, self.keystone.token(user),
                                **kwargs)

    def create(self, user, profile=PROFILE):
        return self.call('POST', ARQS, user,
                         json={'device_profile_name': profile})

    def project(self, user):
        return self.keystone.project_ids[self.keystone.user_projects[user]]

    def count_in_db(self, user):
        """The project's ARQs in the database, not through our API."""
        with self.dep.engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT COUNT(*) FROM extended_accelerator_requests '
                'WHERE project_id = :p'), {'p': self.project(user)}).scalar()

    def listed(self, user):
        resp = self.call('GET', ARQS, user)
        assert resp.status_code == 200, resp.text
        return [a['uuid'] for a in resp.json()['arqs']]

    def delete_all(self, user):
        uuids = self.listed(user)
        if uuids:
            resp = self.call('DELETE', '%s?arqs=%s' % (ARQS, ','.join(uuids)),
                             user)
            assert resp.status_code == 204, resp.text
        assert self.count_in_db(user) == 0


@pytest.fixture(scope='module')
def deployment(keystone_cloud, tmp_path_factory):
    """Replaces conftest's: one deployment, on PostgreSQL, authenticating
    with Keystone and reading its limits (under this name its logs join the
    report of a failed test)."""
    workdir = str(tmp_path_factory.mktemp('keystone-limits'))
    config = '[quota]\ndriver = unified_limits\n\n' + \
        keystone_cloud.oslo_limit_config()
    with ks.keystone_deployment('postgresql', workdir, keystone_cloud,
                                extra_config=config) as dep:
        yield dep


@pytest.fixture(scope='module')
def env(deployment, keystone_cloud):
    e = Env(deployment, keystone_cloud)
    for name, groups in ((PROFILE, [{'resources:FPGA': '1'}]),
                         (PROFILE_TWO, [{'resources:FPGA': '2'}])):
        resp = e.call('POST', '/v2/device_profiles', 'admin',
                      json={'name': name, 'groups': groups})
        assert resp.status_code == 201, resp.text
    return e


@pytest.fixture
def clean(env):
    """Every test starts and ends with no ARQs in p1 and p2."""
    for user in ('p1-member', 'p2-member'):
        env.delete_all(user)
    yield env
    for user in ('p1-member', 'p2-member'):
        env.delete_all(user)


def _fill(env, user, limit):
    for number in range(limit):
        resp = env.create(user)
        assert resp.status_code == 201, (user, number, resp.text)
    resp = env.create(user)
    assert resp.status_code == 403, resp.text
    assert ('Quota exceeded for FPGA: limit %d, in use %d, requested 1'
            % (limit, limit)) in resp.text, resp.text
    assert env.count_in_db(user) == limit


def test_p1_gets_its_project_limit(clean):
    _fill(clean, 'p1-member', ks.P1_FPGA_LIMIT)
    # What the project's reader is shown.
    resp = clean.call('GET', '/v2/quotas/%s' % clean.project('p1-member'),
                      'p1-reader')
    assert resp.status_code == 200, resp.text
    quota = resp.json()['quota']
    assert quota['limits']['FPGA'] == ks.P1_FPGA_LIMIT
    assert quota['usage']['FPGA'] == ks.P1_FPGA_LIMIT


def test_p2_gets_the_registered_default(clean):
    _fill(clean, 'p2-member', ks.REGISTERED_FPGA_LIMIT)
    # p1 is not affected by p2's usage, nor p2 by p1's.
    assert clean.create('p1-member').status_code == 201


def test_a_request_larger_than_what_is_left_is_refused_whole(clean):
    assert clean.create('p2-member').status_code == 201
    resp = clean.create('p2-member', PROFILE_TWO)
    assert resp.status_code == 403, resp.text
    assert 'Quota exceeded for FPGA: limit 2, in use 1, requested 2' in \
        resp.text, resp.text
    assert clean.count_in_db('p2-member') == 1


def test_deleting_gives_the_quota_back(clean):
    _fill(clean, 'p2-member', ks.REGISTERED_FPGA_LIMIT)
    first = clean.listed('p2-member')[0]
    resp = clean.call('DELETE', '%s?arqs=%s' % (ARQS, first), 'p2-member')
    assert resp.status_code == 204, resp.text
    assert clean.create('p2-member').status_code == 201
    assert clean.create('p2-member').status_code == 403


@pytest.mark.parametrize('already', [0, 2])
def test_concurrent_requests_never_exceed_the_limit(clean, already):
    """Many members create at once (already ``already`` in use): exactly
    the rest of the limit is granted, and the database agrees."""
    for _ in range(already):
        assert clean.create('p1-member').status_code == 201
    attempts = 10
    barrier = threading.Barrier(attempts)

    def create(_):
        barrier.wait(timeout=30)
        return clean.create('p1-member')

    with concurrent.futures.ThreadPoolExecutor(attempts) as pool:
        results = list(pool.map(create, range(attempts)))
    statuses = sorted(r.status_code for r in results)
    granted = ks.P1_FPGA_LIMIT - already
    assert statuses == [201] * granted + [403] * (attempts - granted), [
        (r.status_code, r.text) for r in results]
    for refused in (r for r in results if r.status_code == 403):
        assert 'Quota exceeded for FPGA: limit 3' in refused.text, \
            refused.text
    assert clean.count_in_db('p1-member') == ks.P1_FPGA_LIMIT
    assert len(clean.listed('p1-member')) == ks.P1_FPGA_LIMIT


def test_concurrent_requests_of_two_projects(clean):
    """p1 and p2 race at the same time: each gets exactly its own limit."""
    users = ['p1-member'] * 6 + ['p2-member'] * 6
    barrier = threading.Barrier(len(users))

    def create(user):
        barrier.wait(timeout=30)
        resp = clean.create(user)
        return user, resp.status_code, resp.text

    with concurrent.futures.ThreadPoolExecutor(len(users)) as pool:
        results = list(pool.map(create, users))
    summary = [(user, status, text[:200]) for user, status, text in results]
    assert {status for _, status, _ in results} == {201, 403}, summary
    for user, limit in (('p1-member', ks.P1_FPGA_LIMIT),
                        ('p2-member', ks.REGISTERED_FPGA_LIMIT)):
        granted = [s for u, s, _ in results if u == user and s == 201]
        assert len(granted) == limit, summary
        assert clean.count_in_db(user) == limit


def test_limits_are_set_in_keystone_not_here(clean):
    """PUT and DELETE /v2/quotas answer 409 naming Keystone's limit API
    (an admin's; a member is refused by policy first); GET shows the
    limits as Keystone's, unchanged."""
    env = clean
    path = '/v2/quotas/%s' % env.project('p1-member')
    assert env.create('p1-member').status_code == 201
    for method, body in (('PUT', {'limits': {'FPGA': 10}}),
                         ('DELETE', None)):
        resp = env.call(method, path, 'admin', json=body)
        assert resp.status_code == 409, resp.text
        fault = json.loads(resp.json()['error_message'])
        assert fault['error_code'] == 'accel.quota.limits_in_keystone'
        assert "Keystone's limit API (/v3/limits" in fault['faultstring']
        resp = env.call(method, path, 'p1-member', json=body)
        assert resp.status_code == 403, resp.text
    resp = env.call('GET', path, 'p1-reader')
    assert resp.status_code == 200, resp.text
    quota = resp.json()['quota']
    assert (quota['limits']['FPGA'], quota['sources']['FPGA']) == (
        ks.P1_FPGA_LIMIT, 'keystone')


def _p1_limit_id(keystone):
    return keystone.admin_request(
        'GET', '/limits?project_id=%s&resource_name=class:FPGA'
        % keystone.project_ids['p1'])['limits'][0]['id']


def _set_limit(keystone, limit_id, value):
    keystone.admin_request('PATCH', '/limits/%s' % limit_id,
                           json={'limit': {'resource_limit': value}})


def test_a_limit_changed_in_keystone_applies(clean):
    """An operator changes limits in Keystone: the running service honours
    them at once (no restart, no stale copy)."""
    keystone = clean.keystone
    _fill(clean, 'p1-member', ks.P1_FPGA_LIMIT)
    p1_limit = _p1_limit_id(keystone)
    _set_limit(keystone, p1_limit, ks.P1_FPGA_LIMIT + 1)
    try:
        resp = clean.create('p1-member')
        assert resp.status_code == 201, resp.text
        _set_limit(keystone, p1_limit, 1)
        resp = clean.create('p1-member')
        assert resp.status_code == 403, resp.text
        assert 'limit 1, in use 4, requested 1' in resp.text, resp.text
    finally:
        _set_limit(keystone, p1_limit, ks.P1_FPGA_LIMIT)
    clean.delete_all('p1-member')
    _fill(clean, 'p1-member', ks.P1_FPGA_LIMIT)

    # A project limit made for p2 replaces the registered default...
    _fill(clean, 'p2-member', ks.REGISTERED_FPGA_LIMIT)
    p2_limit = keystone.admin_request('POST', '/limits', json={'limits': [{
        'service_id': keystone.service_id, 'region_id': ks.REGION,
        'project_id': clean.project('p2-member'),
        'resource_name': 'class:FPGA', 'resource_limit': 4}]}
    )['limits'][0]['id']
    try:
        resp = clean.create('p2-member')
        assert resp.status_code == 201, resp.text
    finally:
        keystone.admin_request('DELETE', '/limits/%s' % p2_limit)
    # ... and its removal restores the default.
    resp = clean.create('p2-member')
    assert resp.status_code == 403, resp.text
    assert 'limit 2, in use 3' in resp.text, resp.text


@pytest.fixture
def limits_through_a_proxy(keystone_cloud):
    """The conductor's reader of limits, in this process, reaching Keystone
    through a proxy the test can cut (oslo.limit reads the global CONF)."""
    from oslo_limit import limit as limit_lib
    from oslo_limit import opts as limit_opts

    from cyborg_like.conductor import quotas
    from cyborg_like.conf import CONF
    from . import tcpproxy

    proxy = tcpproxy.TcpProxy('127.0.0.1', keystone_cloud.port).start()
    via_proxy = 'http://127.0.0.1:%d/v3' % proxy.port
    overrides = [('driver', 'unified_limits', 'quota')] + [
        (name, value, 'oslo_limit') for name, value in (
            ('endpoint_id', keystone_cloud.endpoint_id),
            ('auth_url', via_proxy), ('endpoint_override', via_proxy),
            ('auth_type', 'password'), ('username', 'cyborg'),
            ('password', keystone_cloud.password('cyborg')),
            ('user_domain_name', 'Default'), ('system_scope', 'all'))]
    limit_lib._SDK_CONNECTION = None
    try:
        # auth_type first: it decides which plugin options exist.
        limit_opts.register_opts(CONF)
        CONF.set_override('auth_type', 'password', group='oslo_limit')
        limit_opts.register_opts(CONF)
        for name, value, group in overrides:
            CONF.set_override(name, value, group=group)
        yield quotas.Limits(CONF), proxy
    finally:
        for name, _, group in overrides:
            CONF.clear_override(name, group=group)
        limit_lib._SDK_CONNECTION = None
        proxy.stop()


def test_keystone_unreachable_is_unavailable_not_a_server_error(
        limits_through_a_proxy, keystone_cloud):
    """Limits are read on every creation and bind: a dropped connection is
    retried, and a Keystone that stays away is a 503 the caller may retry
    (LimitsUnavailable), never a 500."""
    from cyborg_like.common import exception

    limits, proxy = limits_through_a_proxy
    p1 = keystone_cloud.project_ids['p1']
    assert limits.for_project(p1, ['FPGA']) == {'FPGA': ks.P1_FPGA_LIMIT}
    proxy.cut('reset')
    with pytest.raises(exception.LimitsUnavailable) as raised:
        limits.for_project(p1, ['FPGA'])
    assert 'Keystone' in str(raised.value)
    proxy.restore()
    assert limits.for_project(p1, ['FPGA']) == {'FPGA': ks.P1_FPGA_LIMIT}
