#!/usr/bin/env bash
# Build (once) a minimal Debian root for the playbook tests and print its
# path. tests/integration/test_playbooks.py copies it for each target and
# reaches it through a chroot connection, so the real playbooks install
# and remove real .deb packages somewhere that is not this machine.
#
# Cached in $CYBORG_LIKE_CACHE_DIR (default: .cache/ in the checkout): a
# root is rebuilt only when its stamp ("want" below) changes. Needs root
# (debootstrap, chroot) and the Debian mirror this machine's apt uses.
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=${DEBIAN_ROOT_SUITE:-bookworm}
CACHE=${CYBORG_LIKE_CACHE_DIR:-$PWD/.cache}
# python3-apt: the apt and package_facts modules; systemd: systemctl for
# the services the roles enable.
INCLUDE=python3,python3-apt,systemd
ROOT="$CACHE/debian-root-$SUITE"
STAMP="$ROOT/.cyborg-like-root"
# Bump the last word when the way the root is made changes.
want="$SUITE $INCLUDE policy-rc.d"

log() { echo "[debian-root] $*" >&2; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    echo "$ROOT"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    log "needs root (debootstrap and chroot)"; exit 1
fi
if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap"
    # A source of this machine that cannot be fetched makes update exit
    # non-zero; the install below is the verdict.
    apt-get update -qq || log "apt-get update reported errors; installing anyway"
    apt-get install -y -qq debootstrap >/dev/null
fi

# The mirror apt already uses here (deb822 sources first, then the
# one-line format); a run may name another with DEBIAN_MIRROR.
mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
    mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
fi
if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" && $0 !~ /security/ {
                  for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}
              }' /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$mirror" ] || { log "no Debian mirror found; set DEBIAN_MIRROR"; exit 1; }

log "building $ROOT ($SUITE from $mirror); this takes a few minutes once"
rm -rf "$ROOT.new"
mkdir -p "$CACHE"
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$ROOT.new" \
    "$mirror" >"$CACHE/debootstrap-$SUITE.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap-$SUITE.log" >&2; exit 1; }
# The playbooks' apt tasks read the same mirror; nothing starts services
# inside the root (policy-rc.d 101 = action forbidden).
echo "deb $mirror $SUITE main" >"$ROOT.new/etc/apt/sources.list"
printf '#!/bin/sh\nexit 101\n' >"$ROOT.new/usr/sbin/policy-rc.d"
chmod 755 "$ROOT.new/usr/sbin/policy-rc.d"
chroot "$ROOT.new" apt-get clean
rm -rf "$ROOT"
mv "$ROOT.new" "$ROOT"
echo "$want" >"$STAMP"
log "done: $(du -sh "$ROOT" | cut -f1)"
echo "$ROOT"
