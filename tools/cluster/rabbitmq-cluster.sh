#!/bin/bash
# Three RabbitMQ nodes as one cluster on loopback, apart from the
# machine's own broker (rabbit@localhost on 5672 stays untouched).
#
#   tools/cluster/rabbitmq-cluster.sh start|stop|status   # status: the nodes booted
#   tools/cluster/rabbitmq-cluster.sh kill N     # SIGKILL node N (1-3)
#   tools/cluster/rabbitmq-cluster.sh revive N   # start node N again; it rejoins
#   tools/cluster/rabbitmq-cluster.sh urls       # the transport_url hosts
#   tools/cluster/rabbitmq-cluster.sh partition N  # cut node N off the others
#   tools/cluster/rabbitmq-cluster.sh heal         # end every partition
#
# Every node has its own name (cl<N>@localhost), AMQP port
# ($CLUSTER_RABBIT_PORT_BASE+N, 5701-5703 by default), distribution port
# (25700+N), mnesia and log dirs under $CLUSTER_BASE/rabbitmq, and the
# cluster has its own Erlang cookie: every rabbitmqctl here runs with a HOME
# of the cluster's own, so it reads that cookie and never the machine's.
# The Erlang VMs run on one scheduler without busy waiting: the machine is
# small and shared.
#
# A partition drops (iptables) every packet of node N's Erlang
# distribution: to and from its distribution port, and from and to
# 127.0.1.N, the address node N opens its own distribution connections
# from (inet_dist_connect_options). Its AMQP port stays reachable, as when
# a switch between brokers fails. The nodes tick every 6 s (net_ticktime),
# so a partition is noticed within about 6-8 s; pause_minority then pauses
# the node left alone (it closes its clients' connections) until it sees
# the others again.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

BASE=${CLUSTER_BASE:-/tmp/cyborg-like-cluster}/rabbitmq
PORT_BASE=${CLUSTER_RABBIT_PORT_BASE:-5700}
DIST_BASE=${CLUSTER_RABBIT_DIST_BASE:-25700}
NODES="1 2 3"
RMQ=/usr/lib/rabbitmq/bin  # not /usr/sbin: its wrapper switches to the rabbitmq user

node_name() { echo "cl$1@localhost"; }
node_dir() { echo "$BASE/node$1"; }

node_env() {
    # The environment of node $1, for rabbitmq-server and rabbitmqctl.
    local n=$1 dir
    dir=$(node_dir "$n")
    export HOME=$BASE/home
    export RABBITMQ_CONF_ENV_FILE=$BASE/rabbitmq-env.conf
    export RABBITMQ_NODENAME
    RABBITMQ_NODENAME=$(node_name "$n")
    export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
    export RABBITMQ_NODE_PORT=$((PORT_BASE + n))
    export RABBITMQ_DIST_PORT=$((DIST_BASE + n))
    export RABBITMQ_CONFIG_FILE=$BASE/rabbitmq.conf
    export RABBITMQ_ENABLED_PLUGINS_FILE=$BASE/enabled_plugins
    export RABBITMQ_MNESIA_BASE=$dir/mnesia
    export RABBITMQ_LOG_BASE=$dir/log
    export RABBITMQ_PID_FILE=$dir/pid
    export ERL_CRASH_DUMP=$dir/log/erl_crash.dump   # not in the caller's cwd
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+sbwt none +sbwtdcpu none +sbwtdio none +S 1:1 +A 4 -kernel net_ticktime 6 -kernel inet_dist_connect_options [{ip,{127,0,1,$n}}]"
    export ERL_EPMD_ADDRESS=127.0.0.1
}

ctl() {
    # rabbitmqctl against node $1 only, with the cluster's cookie.
    local n=$1
    shift
    (node_env "$n" && "$RMQ/rabbitmqctl" -n "$(node_name "$n")" "$@")
}

ctl_within() {
    # ctl, given up after $1 seconds (a node cut off may never answer).
    local seconds=$1 n=$2
    shift 2
    (node_env "$n" && timeout "$seconds" "$RMQ/rabbitmqctl" -n "$(node_name "$n")" "$@")
}

write_config() {
    mkdir -p "$BASE/home"
    if [ ! -f "$BASE/home/.erlang.cookie" ]; then
        head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$BASE/home/.erlang.cookie"
        chmod 400 "$BASE/home/.erlang.cookie"
    fi
    : >"$BASE/rabbitmq-env.conf"
    echo '[].' >"$BASE/enabled_plugins"
    cat >"$BASE/rabbitmq.conf" <<'EOF'
loopback_users = none
# A node that comes back after a kill rejoins without an operator.
cluster_partition_handling = pause_minority
vm_memory_high_watermark.relative = 0.2
disk_free_limit.absolute = 50MB
log.console = false
log.file.level = warning
EOF
}

start_node() {
    local n=$1 dir
    dir=$(node_dir "$n")
    mkdir -p "$dir/log" "$dir/mnesia"
    (node_env "$n" && setsid "$RMQ/rabbitmq-server" >"$dir/log/stdout" 2>&1 </dev/null &)
    ctl "$n" wait "$dir/pid" --timeout 90 >/dev/null
}

node_pid() {
    local f
    f=$(node_dir "$1")/pid
    [ -s "$f" ] && cat "$f"
}

start() {
    local n
    for n in $NODES; do
        port_free $((PORT_BASE + n)) || {
            echo "port $((PORT_BASE + n)) is taken: is a cluster running? stop it first" >&2
            exit 1
        }
    done
    write_config
    for n in $NODES; do start_node "$n"; done
    for n in 2 3; do
        ctl "$n" stop_app >/dev/null
        ctl "$n" join_cluster "$(node_name 1)" >/dev/null
        ctl "$n" start_app >/dev/null
    done
    status
}

kill_node() {
    local pid
    pid=$(node_pid "$1") || return 0
    kill -9 "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

stop() {
    local n
    heal
    for n in $NODES; do
        if [ -n "$(node_pid "$n" || true)" ]; then
            ctl "$n" stop --idempotent >/dev/null 2>&1 || true
            kill_node "$n"
        fi
    done
    rm -rf "$BASE"
    rmdir --ignore-fail-on-non-empty "$(dirname "$BASE")" 2>/dev/null || true
}

status() {
    # "running:" and the nodes booted (their rabbit app started, not
    # paused by pause_minority), each asked itself: after a partition's
    # heal, node 1's cluster view lists all three while its app may still
    # be booting, and a node cut off sees only itself.
    local n running=()
    for n in $NODES; do
        if [ "$(ctl_within 30 "$n" eval 'rabbit:is_booted().' 2>/dev/null)" = true ]; then
            running+=("$(node_name "$n")")
        fi
    done
    echo "running: ${running[*]}"
}

partition_rules() {
    # The iptables rules that cut node $1 off (see the head of this file).
    local dist=$((DIST_BASE + $1)) tag="cyborg-like-cluster-partition"
    echo "-p tcp --dport $dist -m comment --comment $tag -j DROP"
    echo "-p tcp --sport $dist -m comment --comment $tag -j DROP"
    echo "-s 127.0.1.$1 -p tcp -m comment --comment $tag -j DROP"
    echo "-d 127.0.1.$1 -p tcp -m comment --comment $tag -j DROP"
}

partition() {
    command -v iptables >/dev/null || apt-get install -y iptables >/dev/null
    local rule
    partition_rules "$1" | while read -r rule; do
        # shellcheck disable=SC2086 # a rule is several words
        iptables -w -I INPUT $rule
    done
}

heal() {
    command -v iptables >/dev/null || return 0
    local rule
    { iptables -w -S INPUT | grep -e '--comment cyborg-like-cluster-partition' || true; } |
        sed 's/^-A INPUT //' | while read -r rule; do
        # shellcheck disable=SC2086
        eval iptables -w -D INPUT $rule
    done
}

urls() {
    local n hosts=()
    for n in $NODES; do hosts+=("guest:guest@127.0.0.1:$((PORT_BASE + n))"); done
    (IFS=,; echo "rabbit://${hosts[*]}/")
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    kill) kill_node "${2:?node 1-3}" ;;
    revive) start_node "${2:?node 1-3}" ;;
    urls) urls ;;
    partition) partition "${2:?node 1-3}" ;;
    heal) heal ;;
    ctl) shift; ctl "$@" ;;
    *) echo "usage: $0 start|stop|status|kill N|revive N|urls|partition N|heal|ctl N ARGS" >&2; exit 2 ;;
esac
