#!/usr/bin/env bash
# Integration tests: API, conductor and agent as separate processes against
# the real RabbitMQ (127.0.0.1:5672, guest), MariaDB (127.0.0.1:3306, root)
# and PostgreSQL (127.0.0.1:5432, postgres, trust) of this machine; .ci/run
# starts them if they are down. A service that is not there fails the tests
# (never skips them). Each run makes its own vhost and databases and removes
# them at the end.
# The tests run in parallel workers (pytest-xdist), a module and its shared
# deployment on one worker; CYBORG_LIKE_INTEGRATION_WORKERS sets how many
# (default 3). --setup-only installs what the tests need and runs none.
# Extra arguments go to pytest (e.g. -k postgresql, -x, -v).
set -euo pipefail
cd "$(dirname "$0")/.."
# test_playbooks.py: gcc builds the fake NVML its nvidia package ships;
# tools/make-debian-root.sh (called by the test) installs debootstrap.
# test_fpga_programming.py: the agent runs under umockdev's preload library
# (a fake sysfs of FPGA regions). Installed here, not only by
# tools/run-tests.sh: run alone, this suite must not lean on that one.
missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v umockdev-wrapper >/dev/null || missing+=(umockdev)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# test_prometheus.py: a real Prometheus (Debian's package; its service is
# not started, the test runs its own on a free port).
if ! command -v prometheus >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq || echo "apt-get update reported errors; installing anyway" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
fi
tools/setup-venv.sh
# test_cyborg_tempest.py: Cyborg's own API tests, in a venv of their own.
tools/setup-tempest-venv.sh
# test_real_nova.py: the real Nova 34, in a venv of its own.
tools/setup-nova-venv.sh
# Bytecode caches are written even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): every pytest worker and every service the
# tests start would otherwise compile the project's modules, and pytest
# rewrite the test modules, from source (about half of a worker's start).
unset PYTHONDONTWRITEBYTECODE
# No column positions in tracebacks: Python 3.11's traceback module parses
# each frame's line with ast to draw its ^^^ marks, and its AST check is
# not thread-safe ("SystemError: AST constructor recursion depth
# mismatch"): a service thread logging a traceback while pytest formats a
# failure crashed a worker and ended the run (CI run 8).
export PYTHONNODEBUGRANGES=1
if [ "${1:-}" = --setup-only ]; then
    exit 0
fi
exec .venv/bin/python -m pytest -m integration tests/integration \
    -p no:cacheprovider -n "${CYBORG_LIKE_INTEGRATION_WORKERS:-3}" \
    --dist loadgroup "$@"
