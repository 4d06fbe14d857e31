"""etc/cyborg_like/policy-cyborg-compatible.yaml grants what Cyborg's
defaults grant where ours are stricter (docs/compatibility.md), and
nothing else: loaded as the policy file of a real enforcer."""

import configparser
import os

from oslo_config import cfg
from oslo_policy import policy
import pytest
import yaml

from cyborg_like import policies
from cyborg_like.api import policy as api_policy
from cyborg_like.common import context as context_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
COMPATIBLE = os.path.join(ROOT, 'etc', 'cyborg_like',
                          'policy-cyborg-compatible.yaml')
INVENTORY_READS = {'cyborg:%s:%s' % (noun, verb)
                   for noun in ('device', 'deployable', 'attribute')
                   for verb in ('get_all', 'get_one')}


@pytest.fixture
def enforcer():
    conf = cfg.ConfigOpts()
    conf([], project='cyborg_like_test', default_config_files=[])
    found = policy.Enforcer(conf, policy_file=COMPATIBLE)
    found.register_defaults(policies.list_rules())
    found.load_rules()
    return found


def _ctx(roles, project='p1', service_roles=()):
    return context_lib.RequestContext(
        roles=list(roles), project_id=project,
        service_roles=list(service_roles))


def _allowed(enforcer, rule, ctx, target):
    return bool(enforcer.authorize(rule, target, ctx))


def test_it_names_only_the_inventory_reads():
    with open(COMPATIBLE) as f:
        rules = yaml.safe_load(f)
    assert set(rules) == INVENTORY_READS
    registered = {r.name for r in policies.list_rules()}
    assert set(rules) <= registered


def test_any_projects_manager_reads_the_inventory(enforcer):
    """As in Cyborg: a manager of any project, checked against the
    cloud's inventory (a target without a project)."""
    for rule in INVENTORY_READS:
        for project in ('p1', 'p2'):
            assert _allowed(enforcer, rule, _ctx(['manager'], project),
                            api_policy.CLOUD), rule
        assert _allowed(enforcer, rule, _ctx(['admin']), api_policy.CLOUD)
        for roles in (['member', 'reader'], ['reader'], ['service']):
            assert not _allowed(enforcer, rule, _ctx(roles),
                                api_policy.CLOUD), (rule, roles)


def test_every_other_rule_keeps_our_default(enforcer):
    """Who takes a device from a guest, who changes the inventory: the
    file leaves them as they are (only Nova; the admin)."""
    defaults = {r.name: r.check_str for r in policies.list_rules()}
    for name, check_str in defaults.items():
        if name not in INVENTORY_READS:
            assert str(enforcer.rules[name]) == str(
                policy._parser.parse_rule(check_str)), name
    admin = _ctx(['admin', 'manager', 'member', 'reader'])
    for rule in ('cyborg:arq:delete_bound', 'cyborg:arq:unbind_bound'):
        assert not _allowed(enforcer, rule, admin, {'project_id': 'p1'})
    assert not _allowed(enforcer, 'cyborg:device:disable',
                        _ctx(['manager']), api_policy.CLOUD)


def test_it_is_shipped():
    cfg_file = configparser.ConfigParser()
    cfg_file.read(os.path.join(ROOT, 'setup.cfg'))
    shipped = cfg_file['options.data_files']['share/cyborg_like'].split()
    assert 'etc/cyborg_like/policy-cyborg-compatible.yaml' in shipped
