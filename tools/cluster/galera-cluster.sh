#!/bin/bash
# Three MariaDB nodes as one Galera cluster on loopback, apart from the
# machine's own MariaDB (3306 stays untouched).
#
#   tools/cluster/galera-cluster.sh start|stop|status
#   tools/cluster/galera-cluster.sh kill N     # SIGKILL node N (1-3)
#   tools/cluster/galera-cluster.sh revive N   # start node N again; it rejoins (IST/SST)
#   tools/cluster/galera-cluster.sh url [N]    # the [database] connection: through
#                                              # the proxy, or to node N
#   tools/cluster/galera-cluster.sh proxy-node # the node the proxy sends clients to
#
# Node N listens on $CLUSTER_GALERA_PORT_BASE+N (3401-3403 by default), on
# a socket and datadir of its own under $CLUSTER_BASE/galera, group
# communication on 4560+N, IST on 4570+N, SST (rsync) on 4580+N. Node 1
# bootstraps the cluster (--wsrep-new-cluster); 2 and 3 join it with an
# empty datadir and receive it by SST. Every mariadbd runs with
# --defaults-file of its own, so /etc/mysql is never read. The nodes run as
# the mysql user, not root: the rsync daemon that receives an SST drops to
# "nobody" when started by root and could not write the datadir.
#
# HAProxy on $CLUSTER_GALERA_PORT_BASE (3400) is what clients connect to,
# as in OpenStack deployments: one node takes every connection (node 1
# first, 2 and 3 are backups), so that conductors never write through two
# nodes at once (no certification conflicts between them). A node that
# fails its check (a MySQL handshake every second) has its connections cut
# and new ones go to the next; connections stick to the node they moved to
# (no failback to a node still catching up).
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

BASE=${CLUSTER_BASE:-/tmp/cyborg-like-cluster}/galera
PORT_BASE=${CLUSTER_GALERA_PORT_BASE:-3400}
GCOMM_BASE=4560
IST_BASE=4570
SST_BASE=4580
NODES="1 2 3"
DB_USER=cyborg
DB_PASSWORD=cyborg-cluster
DB_NAME=cyborg_like
RUN_AS=mysql

node_dir() { echo "$BASE/node$1"; }
sock() { echo "$(node_dir "$1")/mysqld.sock"; }
sql() {
    local n=$1
    shift
    mariadb --no-defaults --user=root --socket="$(sock "$n")" -N -B -e "$@"
}

need_packages() {
    # SST copies the datadir with rsync; HAProxy fronts the nodes. Install
    # them as the task that set this machine up would have.
    local missing=()
    command -v rsync >/dev/null || missing+=(rsync)
    command -v haproxy >/dev/null || missing+=(haproxy)
    [ ${#missing[@]} -eq 0 ] && return
    apt-get install -y "${missing[@]}" >/dev/null
}

write_proxy_config() {
    local n backup
    {
        cat <<EOF
global
    maxconn 2000
    pidfile $BASE/haproxy.pid

defaults
    mode tcp
    retries 3
    option redispatch
    timeout connect 2s
    # Pooled connections sit idle up to [database] connection_recycle_time.
    timeout client 1h
    timeout server 1h

listen galera
    bind 127.0.0.1:$PORT_BASE
    option mysql-check user haproxy_check post-41
    stick-table type ip size 1
    stick on dst
    default-server check inter 1s rise 2 fall 1 on-marked-down shutdown-sessions
EOF
        for n in $NODES; do
            backup=""
            [ "$n" = 1 ] || backup=" backup"
            echo "    server node$n 127.0.0.1:$((PORT_BASE + n))$backup"
        done
    } >"$BASE/haproxy.cfg"
}

start_proxy() {
    write_proxy_config
    haproxy -D -f "$BASE/haproxy.cfg" >>"$BASE/haproxy.log" 2>&1
    for _ in $(seq 1 100); do
        mariadb --no-defaults -h 127.0.0.1 -P "$PORT_BASE" -u "$DB_USER" \
            -p"$DB_PASSWORD" -N -B -e 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "haproxy on $PORT_BASE does not answer; see $BASE/haproxy.log" >&2
    return 1
}

stop_proxy() {
    if [ -s "$BASE/haproxy.pid" ]; then
        kill "$(cat "$BASE/haproxy.pid")" 2>/dev/null || true
    fi
    rm -f "$BASE/haproxy.pid"
}

proxy_node() {
    # The node the proxy sends connections to now.
    local port
    port=$(mariadb --no-defaults -h 127.0.0.1 -P "$PORT_BASE" -u "$DB_USER" \
        -p"$DB_PASSWORD" -N -B -e 'SELECT @@port')
    echo $((port - PORT_BASE))
}

gcomm_address() {
    local n addrs=()
    for n in $NODES; do addrs+=("127.0.0.1:$((GCOMM_BASE + n))"); done
    (IFS=,; echo "gcomm://${addrs[*]}")
}

write_config() {
    local n=$1 dir
    dir=$(node_dir "$n")
    mkdir -p "$dir/data"
    chown "$RUN_AS:" "$dir" "$dir/data"
    cat >"$dir/my.cnf" <<EOF
[mariadbd]
user=$RUN_AS
datadir=$dir/data
socket=$(sock "$n")
pid-file=$dir/mysqld.pid
log-error=$dir/error.log
bind-address=127.0.0.1
port=$((PORT_BASE + n))
skip-name-resolve
innodb_buffer_pool_size=64M
innodb_log_file_size=48M
innodb_flush_log_at_trx_commit=2
performance_schema=OFF
max_connections=400
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
transaction_isolation=READ-COMMITTED
wsrep_on=ON
# Conductors write through different nodes: a read waits until the node
# has applied what the cluster committed before it (causal reads).
wsrep_sync_wait=1
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=cyborg_like
wsrep_cluster_address=$(gcomm_address)
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1:$((GCOMM_BASE + n))
wsrep_node_incoming_address=127.0.0.1:$((PORT_BASE + n))
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$((SST_BASE + n))
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$((GCOMM_BASE + n));ist.recv_addr=127.0.0.1:$((IST_BASE + n));gcache.size=64M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT5S"
EOF
}

start_node() {
    # Start node $1 ($2: extra mariadbd arguments) and wait until it is
    # synced with the cluster.
    local n=$1 dir i
    shift
    dir=$(node_dir "$n")
    write_config "$n"
    set -- "$@" $(recovered_position "$n")
    setsid mariadbd --defaults-file="$dir/my.cnf" "$@" >>"$dir/error.log" 2>&1 </dev/null &
    for i in $(seq 1 600); do
        if [ "$(sql "$n" "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2)" = Synced ]; then
            return 0
        fi
        sleep 0.2
    done
    echo "galera node $n did not sync; see $dir/error.log" >&2
    tail -20 "$dir/error.log" >&2
    return 1
}

recovered_position() {
    # A node killed (SIGKILL) left no position in grastate.dat (seqno -1):
    # started so, it asks for a whole state transfer (SST), and rsync's
    # locks its donor, the node taking the writes, for the transfer (seen:
    # writes stalled 50 s). As MariaDB's galera_recovery does for systemd,
    # read the last committed position from InnoDB first and start from
    # it: the node catches up by IST from a donor's gcache, locking nothing.
    local n=$1 dir position
    dir=$(node_dir "$n")
    grep -q '^seqno: *-1' "$dir/data/grastate.dat" 2>/dev/null || return 0
    position=$(mariadbd --defaults-file="$dir/my.cnf" --wsrep-recover 2>&1 \
        | sed -n 's/.*WSREP: Recovered position: *//p' | tail -1)
    [ -n "$position" ] && echo "--wsrep_start_position=$position"
}

start() {
    local n
    for n in 0 $NODES; do
        port_free $((PORT_BASE + n)) || {
            echo "port $((PORT_BASE + n)) is taken: is a cluster running? stop it first" >&2
            exit 1
        }
    done
    need_packages
    mkdir -p "$(node_dir 1)/data"
    # The nodes run as $RUN_AS: the base may be a private temporary dir.
    chmod 755 "$BASE" "$(dirname "$BASE")"
    write_config 1
    mariadb-install-db --no-defaults --user="$RUN_AS" --datadir="$(node_dir 1)/data" \
        --auth-root-authentication-method=socket --skip-test-db \
        >"$(node_dir 1)/install.log" 2>&1 || { cat "$(node_dir 1)/install.log" >&2; exit 1; }
    start_node 1 --wsrep-new-cluster
    sql 1 "CREATE DATABASE $DB_NAME CHARACTER SET utf8mb4;
           CREATE USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
           GRANT ALL ON *.* TO '$DB_USER'@'127.0.0.1';
           CREATE USER 'haproxy_check'@'127.0.0.1'"
    start_node 2
    start_node 3
    start_proxy
    status
}

node_pid() {
    local f
    f=$(node_dir "$1")/mysqld.pid
    [ -s "$f" ] && cat "$f"
}

kill_node() {
    local pid
    pid=$(node_pid "$1") || return 0
    kill -9 "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    rm -f "$(node_dir "$1")/mysqld.pid"
}

stop() {
    local n pid
    stop_proxy
    for n in 3 2 1; do
        pid=$(node_pid "$n" || true)
        [ -n "$pid" ] || continue
        sql "$n" "SHUTDOWN" >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill_node "$n"
    done
    rm -rf "$BASE"
    rmdir --ignore-fail-on-non-empty "$(dirname "$BASE")" 2>/dev/null || true
}

status() {
    local n
    for n in $NODES; do
        echo "node$n: $(sql "$n" "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
            WHERE VARIABLE_NAME IN ('wsrep_local_state_comment', 'wsrep_cluster_size')
            ORDER BY VARIABLE_NAME" 2>/dev/null | tr '\n' ' ' || echo down)"
    done
}

url() {
    local n=${1:-0}     # 0: the proxy
    echo "mysql+pymysql://$DB_USER:$DB_PASSWORD@127.0.0.1:$((PORT_BASE + n))/$DB_NAME?charset=utf8mb4"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    kill) kill_node "${2:?node 1-3}" ;;
    revive) start_node "${2:?node 1-3}" ;;
    url) url "${2:-0}" ;;
    sql) shift; sql "$@" ;;
    proxy-node) proxy_node ;;
    *) echo "usage: $0 start|stop|status|kill N|revive N|url [N]|sql N QUERY|proxy-node" >&2; exit 2 ;;
esac
