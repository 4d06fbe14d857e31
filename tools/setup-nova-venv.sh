#!/bin/bash
# Nova 34.0.0 (the real one, from PyPI) in a virtualenv of its own, outside
# the product's venv, git-ignored:
#   tools/setup-nova-venv.sh [VENV]   (default: .cache/nova-venv)
# tests/integration/test_real_nova.py runs Nova's API (under gunicorn, also
# installed here), conductor, scheduler and two nova-compute from it against
# a cyborg_like deployment; tools/run-integration-tests.sh calls this in its
# --setup-only phase. PyMySQL: Nova's databases are on MariaDB.
#
# Pins: tools/nova-constraints.txt, the versions pip resolved for the three
# (PyPI only). Idempotent: an existing venv with them is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.cache/nova-venv}
PY=${PYTHON:-python3.11}
CONSTRAINTS=tools/nova-constraints.txt

installed() {
    "$VENV/bin/python" -c '
import importlib.metadata as m, sys
sys.exit(m.version("nova") != "34.0.0"
         or m.version("gunicorn") != "27.0.1"
         or m.version("PyMySQL") != "1.2.4")' 2>/dev/null
}

if [ -x "$VENV/bin/python" ] && installed; then
    exit 0
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -c "$CONSTRAINTS" \
    nova==34.0.0 gunicorn==27.0.1 PyMySQL==1.2.4
installed
echo "$VENV: nova 34.0.0, gunicorn 27.0.1, PyMySQL 1.2.4"
