#!/bin/bash
# Tempest 47.0.0 and cyborg-tempest-plugin 2.8.0 (Cyborg's own API tests)
# in a virtualenv of their own, outside the product's venv, git-ignored:
#   tools/setup-tempest-venv.sh [VENV]   (default: .cache/tempest-venv)
# tests/integration/test_cyborg_tempest.py runs them against a deployment
# behind the real Keystone; tools/run-integration-tests.sh calls this in
# its --setup-only phase.
#
# Pins: tools/tempest-constraints.txt, the versions pip resolved for the
# two (PyPI only). Idempotent: an existing venv with both is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.cache/tempest-venv}
PY=${PYTHON:-python3.11}
CONSTRAINTS=tools/tempest-constraints.txt

installed() {
    "$VENV/bin/python" -c '
import importlib.metadata as m, sys
sys.exit(m.version("tempest") != "47.0.0"
         or m.version("cyborg-tempest-plugin") != "2.8.0")' 2>/dev/null
}

if [ -x "$VENV/bin/python" ] && installed; then
    exit 0
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -c "$CONSTRAINTS" \
    tempest==47.0.0 cyborg-tempest-plugin==2.8.0
installed
echo "$VENV: tempest 47.0.0, cyborg-tempest-plugin 2.8.0"
