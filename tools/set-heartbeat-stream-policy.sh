#!/bin/sh
# Bounds the heartbeat stream's queue on the broker (docs/design.md,
# "Inventory and heartbeats"): RabbitMQ itself drops beats that waited
# longer than TTL_MS, and the oldest beyond MAX_LENGTH. Without it, beats
# sent while no conductor reads the stream pile up, and a fleet beating
# faster than the conductors ingest leaves them reading only beats too old
# to keep (each costs a conductor its reading, for nothing); with it, what
# they read is always fresh. Set TTL_MS to one [agent] heartbeat_interval
# (10 s by default): a beat's deadline is two intervals after it was sent,
# and the second interval is for the time a conductor holds it (up to
# rabbit_qos_prefetch_count beats) before it takes it.
# Run it once per vhost, where rabbitmqctl reaches the broker. One policy
# applies to a queue (the highest priority): merge these keys into your own
# policy if another one matches cyborg_like-heartbeats.info.
#
# Usage: tools/set-heartbeat-stream-policy.sh [VHOST] [MAX_LENGTH] [TTL_MS]
set -eu
vhost=${1:-/}
max_length=${2:-200000}
ttl_ms=${3:-10000}
exec rabbitmqctl -q set_policy -p "$vhost" --apply-to queues --priority 10 \
    cyborg-like-heartbeats '^cyborg_like-heartbeats\.' \
    "{\"max-length\":$max_length,\"overflow\":\"drop-head\",\"message-ttl\":$ttl_ms}"
