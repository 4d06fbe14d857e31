"""Policy rules: documented in code, sample up to date (that every route
asks policy: tests/functional/test_policy_routes.py)."""

import os
import subprocess
import sys

from cyborg_like import policies

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SAMPLE = os.path.join(ROOT, 'etc', 'cyborg_like', 'policy.yaml.sample')


def _operation_rules():
    return {r.name for r in policies.list_rules() if ':' in r.name}


def test_operation_rules_are_documented_and_project_scoped():
    for rule in policies.list_rules():
        if ':' in rule.name:
            assert rule.operations and rule.description, rule.name
            assert rule.scope_types == ['project'], rule.name


def test_committed_sample_is_current(tmp_path):
    generated = tmp_path / 'policy.yaml'
    tool = os.path.join(os.path.dirname(sys.executable),
                        'oslopolicy-sample-generator')
    subprocess.run([tool, '--namespace', 'cyborg_like', '--output-file',
                    str(generated)], check=True)
    with open(SAMPLE) as f:
        assert generated.read_text() == f.read(), (
            'etc/cyborg_like/policy.yaml.sample is stale: run '
            'tools/genpolicy.sh (tox -e genpolicy) and commit the result')


# --- The decisions the code asks of policy (no role names in the code).

from cyborg_like.api import policy as api_policy  # noqa: E402
from cyborg_like.common import context as context_lib  # noqa: E402


def _ctx(roles, project='p1', service_roles=()):
    return context_lib.RequestContext(
        roles=list(roles), project_id=project,
        service_roles=list(service_roles))


NOVA_ON_BEHALF = dict(roles=['member', 'reader'], service_roles=['service'])


def test_only_nova_takes_a_device_from_a_guest():
    """As in Cyborg: an admin too needs Nova's service token to unbind or
    delete a Bound request."""
    for rule in ('cyborg:arq:unbind_bound', 'cyborg:arq:delete_bound'):
        assert not api_policy.check(rule, _ctx(['admin'])), rule
        assert not api_policy.check(rule, _ctx(['admin', 'member'])), rule
        assert api_policy.check(rule, _ctx(['admin'],
                                           service_roles=['service'])), rule
        assert api_policy.check(rule, _ctx(['service'], 'service'))
        assert api_policy.check(rule, _ctx(**NOVA_ON_BEHALF))
        for roles in (['manager', 'member', 'reader'], ['member']):
            assert not api_policy.check(rule, _ctx(roles)), (rule, roles)


def test_only_nova_or_an_admin_binds():
    for rule in ('cyborg:arq:update',):
        assert api_policy.check(rule, _ctx(['admin']))
        assert api_policy.check(rule, _ctx(['Admin']))
        assert api_policy.check(rule, _ctx(['service'], 'service'))
        # A user's token plus Nova's service token (X-Service-Token).
        assert api_policy.check(rule, _ctx(**NOVA_ON_BEHALF))
        for roles in (['manager', 'member', 'reader'], ['member'],
                      ['reader']):
            assert not api_policy.check(rule, _ctx(roles)), (rule, roles)
        # Service roles other than "service" are not Nova.
        assert not api_policy.check(rule, _ctx(
            ['member'], service_roles=['admin']))


def test_members_keep_their_own_requests():
    member = _ctx(['member', 'reader'])
    for rule in ('cyborg:arq:create', 'cyborg:arq:get_all',
                 'cyborg:arq:get_one', 'cyborg:arq:delete'):
        assert api_policy.check(rule, member), rule
        assert not api_policy.check(rule, member,
                                    {'project_id': 'p2'}), rule
    assert not api_policy.check('cyborg:arq:bind_project_id', member)
    assert not api_policy.check('cyborg:arq:bind_project_id',
                                _ctx(['service'], 'service'))
    assert api_policy.check('cyborg:arq:bind_project_id', _ctx(['ADMIN']))


def test_who_is_admin_and_who_sees_all_projects():
    cases = [(['admin'], True, True), (['Admin'], True, True),
             (['service'], False, True), (['SERVICE'], False, True),
             (['manager', 'member', 'reader'], False, False),
             (['member'], False, False), ([], False, False)]
    for roles, is_admin, all_projects in cases:
        ctx = _ctx(roles)
        assert api_policy.check('context_is_admin', ctx) is is_admin, roles
        assert api_policy.check('all_projects_api',
                                ctx) is all_projects, roles
    assert api_policy.check('all_projects_api', _ctx(**NOVA_ON_BEHALF))


INVENTORY_READS = ('cyborg:device:get_all', 'cyborg:device:get_one',
                   'cyborg:deployable:get_all', 'cyborg:deployable:get_one',
                   'cyborg:attribute:get_all', 'cyborg:attribute:get_one',
                   'cyborg:host:get_all')


def test_cloud_inventory_is_the_cloud_admins():
    for rule in INVENTORY_READS:
        assert api_policy.check(rule, _ctx(['admin']), api_policy.CLOUD)
        for roles in (['manager', 'member', 'reader'], ['service']):
            assert not api_policy.check(rule, _ctx(roles),
                                        api_policy.CLOUD), (rule, roles)


def test_a_project_scoped_inventory_rule_cannot_pass(tmp_path):
    """Cloud inventory is checked against a target without a project: an
    operator's project-scoped override matches nobody, rather than every
    project's manager."""
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(
        '"cyborg:device:get_all": "rule:project_manager_api"\n')
    enforcer = api_policy.get_enforcer()
    enforcer.policy_path = str(policy_file)
    enforcer.load_rules(force_reload=True)
    try:
        manager_ctx = _ctx(['manager', 'member', 'reader'])
        assert api_policy.check('cyborg:device:get_all', manager_ctx)
        assert not api_policy.check('cyborg:device:get_all', manager_ctx,
                                    api_policy.CLOUD)
    finally:
        api_policy.reset()


def test_all_projects_crosses_rpc_and_old_contexts_are_scoped():
    ctx = _ctx(['service'], 'service')
    ctx.all_projects = True
    rebuilt = context_lib.RequestContext.from_dict(ctx.to_dict())
    assert rebuilt.all_projects is True
    assert context_lib.project_scope(rebuilt) is None
    older = ctx.to_dict()
    del older['all_projects']     # an API from before the flag
    older['is_admin'] = True
    older['roles'] = ['admin', 'service']
    rebuilt = context_lib.RequestContext.from_dict(older)
    assert rebuilt.all_projects is False
    assert context_lib.project_scope(rebuilt) == 'service'
    # Only a real True widens the scope.
    older['all_projects'] = 'yes'
    assert context_lib.project_scope(
        context_lib.RequestContext.from_dict(older)) == 'service'
    assert context_lib.project_scope(context_lib.get_admin_context()) is None
