#!/usr/bin/env bash
# The cluster tests (tests/cluster, docs/ha.md): three RabbitMQ nodes and
# three Galera nodes on loopback (tools/cluster/), started once for the run
# by the suite's conftest and stopped at its end, beside the machine's own
# RabbitMQ and MariaDB (left untouched). The tests run one at a time: each
# kills a node under load, and the clusters are shared. Extra arguments go
# to pytest (e.g. -k galera, -x). Run with -s to see the measured figures.
# --setup-only installs what the clusters need and runs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# rsync: Galera's SST; haproxy: in front of the Galera nodes; iptables:
# the RabbitMQ partition (tools/cluster/).
missing=()
for tool in rsync haproxy iptables; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
    apt-get update -qq || echo "apt-get update reported errors; installing anyway" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
tools/setup-venv.sh
if [ "${1:-}" = --setup-only ]; then
    exit 0
fi
unset PYTHONDONTWRITEBYTECODE
# See tools/run-tests.sh: no column positions in tracebacks.
export PYTHONNODEBUGRANGES=1
exec .venv/bin/python -m pytest tests/cluster -p no:cacheprovider "$@"
