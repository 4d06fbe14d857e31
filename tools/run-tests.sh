#!/usr/bin/env bash
# Quick start: install what the tests need and run unit, functional and
# hardware-stand-in tests (no services needed). Extra arguments go to pytest.
# The integration tests against RabbitMQ/MariaDB/PostgreSQL are
# tools/run-integration-tests.sh.
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
suites=(tests/unit tests/functional tests/clients tests/placement)
[ -d tests/hardware ] && suites+=(tests/hardware)
exec .venv/bin/python -m pytest -p no:cacheprovider -q "${suites[@]}" "$@"
