"""Every route of the API asks policy before it acts, and every operation
rule guards some route: proved by calling each route of the OpenAPI
document with policies that deny (one rule, or all of them)."""

import os
import re
import uuid

import pytest
import yaml

from cyborg_like import policies
from cyborg_like.api import policy as api_policy
from tests.functional import cloud as cloud_module

ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'admin'}
OPENAPI = os.path.join(os.path.dirname(policies.__file__), os.pardir, 'api',
                       'openapi.yaml')
METHODS = ('get', 'post', 'put', 'patch', 'delete')
# Asked with policy.check, which changes what is done rather than refusing
# (tests/functional/test_policy_scoping.py and test_leases.py show their
# effect).
CHECKED_ONLY = {'cyborg:arq:delete_bound', 'cyborg:arq:unbind_bound',
                'cyborg:lease:preempt'}


def _routes():
    with open(OPENAPI) as f:
        paths = yaml.safe_load(f)['paths']
    return [(method.upper(), path) for path, operations in paths.items()
            if path.startswith('/v2/') for method in operations
            if method in METHODS]


def _requests():
    """(method, path, body, headers) for each route, ids made up, plus a
    bind naming a project and a forced driver operation (their own
    rules)."""
    found = [(method, re.sub(r'\{[^}]+\}', str(uuid.uuid4()), path),
              {} if method in ('POST', 'PUT', 'PATCH') else None, ADMIN)
             for method, path in _routes()]
    bind = [{'op': 'add', 'path': '/' + field, 'value': value}
            for field, value in (('hostname', 'h'), ('device_rp_uuid',
                                 str(uuid.uuid4())),
                                 ('instance_uuid', str(uuid.uuid4())),
                                 ('project_id', 'p'))]
    found.append(('PATCH', '/v2/accelerator_requests',
                  {str(uuid.uuid4()): bind},
                  dict(ADMIN, **{'OpenStack-API-Version':
                                 'accelerator 2.1'})))
    found.append(('POST', '/v2/hosts/%s/driver_operations' % uuid.uuid4(),
                  {'action': 'verify', 'family': 'opae', 'force': True},
                  ADMIN))
    return found


def _operation_rules():
    return sorted(r.name for r in policies.list_rules() if ':' in r.name)


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    policy_file = tmp_path_factory.mktemp('policy') / 'policy.yaml'
    policy_file.write_text('{}\n')
    api_policy.reset()
    cloud = cloud_module.Cloud(overrides={
        ('oslo_policy', 'policy_file'): str(policy_file)}).start()
    cloud.policy_file = policy_file
    try:
        yield cloud
    finally:
        cloud.stop()
        api_policy.reset()


def _deny(cloud, rules):
    cloud.policy_file.write_text(''.join('"%s": "!"\n' % r for r in rules))
    api_policy.reset()      # the enforcer reads the file when made


def _refused(cloud, until=None):
    """{(method, path): rule named in the 403} of every refused request;
    with ``until`` (a rule), only up to the first 403 naming it."""
    refused = {}
    for method, path, body, headers in _requests():
        status, answer = cloud.call(method, path, body, headers)
        if status == 403:
            named = re.findall(r"allow (\S+) to be performed", str(answer))
            refused[(method, re.sub(r'[0-9a-f-]{36}', '{id}', path))] = (
                named[0] if named else answer)
            if until is not None and named[:1] == [until]:
                break
    return refused


def test_no_route_is_refused_by_the_default_policy(cloud):
    _deny(cloud, [])
    assert _refused(cloud) == {}


def test_every_route_is_refused_when_policy_denies_everything(cloud):
    _deny(cloud, _operation_rules())
    refused = _refused(cloud)
    assert len(refused) == len(_routes())
    assert set(refused.values()) <= set(_operation_rules())


# Ids without ':': gabbi's pytest plugin takes any test whose id holds
# one for a gabbi test and fails the whole collection.
@pytest.mark.parametrize('rule', sorted(set(_operation_rules())
                                        - CHECKED_ONLY),
                         ids=lambda rule: rule.replace(':', '.'))
def test_each_rule_guards_a_route(cloud, rule):
    _deny(cloud, [rule])
    assert rule in _refused(cloud, until=rule).values()
