#!/usr/bin/env bash
# Write etc/cyborg_like/cyborg_like.conf.sample from the options in code.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-venv.sh
exec .venv/bin/oslo-config-generator \
    --config-file etc/cyborg_like/cyborg_like-config-generator.conf
