#!/usr/bin/env bash
# Regenerate the config and policy samples from the committed tree (HEAD),
# not the working tree, so uncommitted work elsewhere cannot leak into them.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
wt=$(mktemp -d)
git worktree add -q "$wt" HEAD
trap 'git worktree remove --force "$wt"' EXIT
(cd "$wt" && PYTHONPATH="$wt" "$top/.venv/bin/oslo-config-generator" \
    --config-file etc/cyborg_like/cyborg_like-config-generator.conf &&
 PYTHONPATH="$wt" "$top/.venv/bin/oslopolicy-sample-generator" \
    --namespace cyborg_like --output-file etc/cyborg_like/policy.yaml.sample)
cp "$wt/etc/cyborg_like/cyborg_like.conf.sample" \
   "$wt/etc/cyborg_like/policy.yaml.sample" etc/cyborg_like/
