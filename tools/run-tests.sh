#!/usr/bin/env bash
# Quick start: install what the tests need and run the unit, functional,
# client and Placement tests, and beside them the hardware-stand-in tests
# (no services needed). The integration tests against
# RabbitMQ/MariaDB/PostgreSQL are tools/run-integration-tests.sh.
#
# Both runs use parallel workers (pytest-xdist), in a random order whose
# seed the header prints (--order-seed N repeats it; docs/testing.md).
# The hardware tests run in a pytest of their own under umockdev-wrapper,
# whose preload library must be in the process from its start; the rest
# run without it. Extra arguments go to both runs (e.g. -x, -k, --lf is
# not kept: the runs use no cache). Environment:
#   CYBORG_LIKE_TEST_WORKERS  workers of the main run (default 4: the tests
#                             mostly wait, on 2 cores too)
#   CYBORG_LIKE_JUNIT_DIR     write unit.xml and hardware.xml there
set -euo pipefail
cd "$(dirname "$0")/.."

# The hardware stand-ins: umockdev for sysfs/udev, gcc for the fake NVML.
missing=()
command -v umockdev-wrapper >/dev/null || missing+=(umockdev)
command -v gcc >/dev/null || missing+=(gcc)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "Please install: ${missing[*]} (e.g. sudo apt-get install ${missing[*]})" >&2
        exit 1
    fi
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

tools/setup-venv.sh
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

workers=${CYBORG_LIKE_TEST_WORKERS:-4}
junit_dir=${CYBORG_LIKE_JUNIT_DIR:-}
junit() {        # name
    [ -n "$junit_dir" ] && echo "--junitxml=$junit_dir/$1.xml"
    return 0
}
pytest=(.venv/bin/python -m pytest -p no:cacheprovider -q --dist loadgroup)

hardware_log=$(mktemp)
trap 'rm -f "$hardware_log"' EXIT
hardware_rc=5     # no hardware run: as a run without tests
if [ -d tests/hardware ]; then
    umockdev-wrapper "${pytest[@]}" -n 2 $(junit hardware) tests/hardware \
        "$@" >"$hardware_log" 2>&1 &
    hardware_pid=$!
fi

main_rc=0
"${pytest[@]}" -n "$workers" $(junit unit) tests/unit tests/functional \
    tests/clients tests/placement "$@" || main_rc=$?

if [ -n "${hardware_pid:-}" ]; then
    hardware_rc=0
    wait "$hardware_pid" || hardware_rc=$?
    echo
    echo "== hardware stand-in tests (tests/hardware, under umockdev-wrapper)"
    cat "$hardware_log"
fi
# A selection (-k, a path) may leave one of the runs without tests (5).
if [ "$main_rc" -eq 5 ] && [ "$hardware_rc" -eq 5 ]; then exit 5; fi
[ "$main_rc" -eq 5 ] && main_rc=0
[ "$hardware_rc" -eq 5 ] && hardware_rc=0
[ "$main_rc" -eq 0 ] && [ "$hardware_rc" -eq 0 ]
