#!/usr/bin/env bash
# Create or refresh .venv with cyborg_like and everything its tests need.
# Idempotent and quiet when nothing changed; needs Python 3.11+ and network
# access to PyPI the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
stamp="$VENV/.installed"
inputs="requirements.txt test-requirements.txt constraints.txt setup.cfg"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
if [ ! -f "$stamp" ] || [ -n "$(find $inputs -newer "$stamp" 2>/dev/null)" ]; then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -c constraints.txt \
        -r requirements.txt -r test-requirements.txt
    # A cyborg_like.egg-info left by an older install keeps its own entry
    # points list, hiding new plugins (image stores) until it is remade.
    rm -rf cyborg_like.egg-info
    "$VENV/bin/python" -m pip install --quiet --no-deps -e .
    touch "$stamp"
fi
