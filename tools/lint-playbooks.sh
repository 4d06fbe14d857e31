#!/usr/bin/env bash
# ansible-lint of playbooks/ with the production profile (settings in
# playbooks/.ansible-lint). tests/unit/test_playbooks_lint.py runs it, so
# tools/run-tests.sh and CI fail on a finding. ansible-lint comes from
# test-requirements.txt; set ANSIBLE_LINT to use another one.
set -euo pipefail
cd "$(dirname "$0")/../playbooks"
lint=${ANSIBLE_LINT:-}
if [ -z "$lint" ]; then
    if [ -x ../.venv/bin/ansible-lint ]; then
        lint=../.venv/bin/ansible-lint
    else
        lint=ansible-lint
    fi
fi
# Its own bin directory first: ansible-lint runs ansible-playbook
# --syntax-check from the same installation.
PATH="$(dirname "$(command -v "$lint")"):$PATH"
exec "$lint" --nocolor --strict "$@"
