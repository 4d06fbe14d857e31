"""playbooks/ passes ansible-lint's production profile."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.mark.long     # ansible-lint of every playbook
def test_playbooks_pass_ansible_lint():
    lint = os.path.join(os.path.dirname(sys.executable), 'ansible-lint')
    proc = subprocess.run(
        [os.path.join(REPO, 'tools', 'lint-playbooks.sh')],
        env=dict(os.environ, ANSIBLE_LINT=lint),
        capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in (
        proc.stdout + proc.stderr)
