#!/bin/bash
# OpenStack Cyborg 17.0.0 (release 2026.2, from PyPI) in its own virtualenv,
# for `python -m bench compare`. Outside the product's venv, git-ignored:
#   tools/setup-cyborg17-venv.sh [VENV]   (default: .cache/cyborg17-venv)
#
# Pins: bench/cyborg17-constraints.txt, the versions pip resolved for
# openstack-cyborg 17.0.0 + PyMySQL + pyuwsgi under the upper-constraints of
# openstack/requirements master at 33536777 (2026-08-22, the 2026.2 cycle
# Cyborg 17 was released from; stable/2026.2 was not yet branched there).
# Only PyPI is used. Idempotent: an existing venv with cyborg 17 is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.cache/cyborg17-venv}
PY=${PYTHON:-python3.11}
CONSTRAINTS=bench/cyborg17-constraints.txt

if [ -x "$VENV/bin/cyborg-api" ] && "$VENV/bin/python" -c \
        'import importlib.metadata as m, sys; sys.exit(m.version("openstack-cyborg") != "17.0.0")' \
        2>/dev/null && [ -x "$VENV/bin/uwsgi" ]; then
    echo "$VENV: openstack-cyborg 17.0.0 already installed"
    exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -c "$CONSTRAINTS" \
    openstack-cyborg==17.0.0 PyMySQL pyuwsgi
"$VENV/bin/python" -c 'import cyborg, pymysql, pyuwsgi'
echo "$VENV: openstack-cyborg $("$VENV/bin/python" -c \
    'import importlib.metadata as m; print(m.version("openstack-cyborg"))')"
