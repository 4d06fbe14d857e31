#!/usr/bin/env bash
# Write etc/cyborg_like/policy.yaml.sample from the rules in code.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-venv.sh
exec .venv/bin/oslopolicy-sample-generator --namespace cyborg_like \
    --output-file etc/cyborg_like/policy.yaml.sample
