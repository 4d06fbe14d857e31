#!/usr/bin/env bash
# Quick start: API + conductor + agent in one process on SQLite and
# in-process messaging, serving http://127.0.0.1:6666 with the fake driver.
# Extra arguments go to cyborg-like-all-in-one (e.g. --config-file FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-venv.sh
exec .venv/bin/cyborg-like-all-in-one "$@"
