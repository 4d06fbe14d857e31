"""Policy rules: documented in code, used by the API, sample up to date."""

import os
import re
import subprocess
import sys

from cyborg_like import policies

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SAMPLE = os.path.join(ROOT, 'etc', 'cyborg_like', 'policy.yaml.sample')
CONTROLLERS = os.path.join(ROOT, 'cyborg_like', 'api', 'controllers', 'v2')


def _operation_rules():
    return {r.name for r in policies.list_rules() if ':' in r.name}


def test_every_operation_rule_is_enforced_somewhere():
    used = set()
    for name in os.listdir(CONTROLLERS):
        if name.endswith('.py'):
            with open(os.path.join(CONTROLLERS, name)) as f:
                used |= set(re.findall(r"authorize\(\s*'([^']+)'", f.read()))
    assert used == _operation_rules()


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
