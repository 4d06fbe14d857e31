"""The RabbitMQ and Galera clusters of tools/cluster/, seen from a test.

:class:`Clusters` drives the two scripts (start, stop, kill a node,
revive it) under a base directory of its own, and makes what one test
needs on them: a vhost and a database with unique names, removed at the
end. :func:`cluster_config` is the configuration an operator gives
cyborg_like on such clusters (docs/ha.md explains each setting).
"""

import contextlib
import os
import subprocess
import tempfile

import sqlalchemy as sa

from harness import infra

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RABBIT = os.path.join(ROOT, 'tools', 'cluster', 'rabbitmq-cluster.sh')
GALERA = os.path.join(ROOT, 'tools', 'cluster', 'galera-cluster.sh')
RABBIT_PORTS = {1: 5701, 2: 5702, 3: 5703}
GALERA_PORTS = {1: 3401, 2: 3402, 3: 3403}
# HAProxy in front of the nodes (tools/cluster/galera-cluster.sh).
GALERA_PROXY_PORT = 3400
DB_USER, DB_PASSWORD = 'cyborg', 'cyborg-cluster'
# A node's start (and rejoin) waits for it, bounded here.
SCRIPT_TIMEOUT = 180
# A RabbitMQ node resuming on its own (paused, or booting after a heal),
# before it is restarted instead.
NODE_BOOT_TIMEOUT = 30

# What the operator sets for the clusters, beside transport_url and
# [database] connection (docs/ha.md).
CLUSTER_CONFIG = """
[DEFAULT]
# A COMMIT on Galera stalls while the cluster changes its view (a node
# lost: up to evs.suspect_timeout, 3 s here, plus the new view's install).
# The API waits this long past a write's deadline before it answers 503,
# so a write committed during such a stall is answered 2xx, not 503.
rpc_commit_margin = 6

[api]
# An answer lost with a RabbitMQ node is read from the change log, for
# up to this long, before a 503 (docs/ha.md).
lost_answer_timeout = 10

[oslo_messaging_rabbit]
rabbit_quorum_queue = true
heartbeat_timeout_threshold = 10
heartbeat_rate = 2
rabbit_retry_interval = 1
rabbit_retry_backoff = 1
rabbit_interval_max = 5
kombu_failover_strategy = round-robin
kombu_reconnect_delay = 0.5

[database]
max_retries = -1
retry_interval = 1
connection_recycle_time = 60
"""


class Clusters:
    """The two clusters, under ``base`` (CLUSTER_BASE of the scripts)."""

    def __init__(self, base):
        self.env = dict(os.environ, CLUSTER_BASE=base)

    def _script(self, script, *args):
        # Output to a file, not a pipe: the servers the script starts in
        # the background would hold a pipe open after it exits.
        with tempfile.TemporaryFile('w+') as out:
            code = subprocess.run([script] + [str(a) for a in args],
                                  env=self.env, stdout=out,
                                  stderr=subprocess.STDOUT,
                                  timeout=SCRIPT_TIMEOUT).returncode
            out.seek(0)
            text = out.read()
        if code:
            raise infra.HarnessError('%s %s failed (%d):\n%s' % (
                script, ' '.join(map(str, args)), code, text))
        return text

    def rabbit(self, *args):
        return self._script(RABBIT, *args)

    def galera(self, *args):
        return self._script(GALERA, *args)

    def start(self):
        self.rabbit('start')
        self.galera('start')

    def stop(self):
        try:
            self.rabbit('stop')
        finally:
            self.galera('stop')

    def heal(self):
        """Every node up again (a failed test may have left one down, or
        cut off, or paused by pause_minority)."""
        self.rabbit('heal')
        booted = set()

        def all_booted():
            booted.clear()
            booted.update(self.rabbit_running())
            return booted == set(RABBIT_PORTS)
        try:    # a node paused, or booting again after a heal, comes back
            infra.wait_for(all_booted, timeout=NODE_BOOT_TIMEOUT, interval=1)
        except infra.HarnessError:
            pass
        for node in sorted(set(RABBIT_PORTS) - booted):
            self.rabbit('kill', node)       # still paused: start it afresh
            self.rabbit('revive', node)
        for node in GALERA_PORTS:
            if 'Synced' not in self.galera_state(node):
                self.galera('revive', node)

    def rabbit_ctl(self, *args):
        """rabbitmqctl ARGS through the first node that carries it out,
        for what is the cluster's (a vhost, a permission), not a node's:
        after a fault one node may still be paused or booting."""
        def on_any_node():
            errors = []
            for node in RABBIT_PORTS:
                try:
                    self.rabbit('ctl', node, *args)
                    return True
                except infra.HarnessError as exc:
                    errors.append(str(exc))
            raise infra.HarnessError('\n'.join(errors))
        infra.wait_for(on_any_node, timeout=SCRIPT_TIMEOUT, interval=1,
                       message='rabbitmqctl %s on no node' % ' '.join(args))

    def rabbit_running(self):
        line = self.rabbit('status').strip()
        return {int(name[2]) for name in line.split()[1:]}

    def galera_state(self, node):
        return self.galera('status').splitlines()[node - 1]

    def galera_writer(self):
        """The node the proxy sends every connection to."""
        return int(self.galera('proxy-node'))

    @contextlib.contextmanager
    def vhost(self):
        """A transport_url listing the three nodes, on a vhost of its
        own."""
        name = infra.unique_name('vhost')
        self.rabbit_ctl('add_vhost', name)
        try:
            self.rabbit_ctl('set_permissions', '-p', name, 'guest',
                            '.*', '.*', '.*')
            yield 'rabbit://%s/%s' % (','.join(
                'guest:guest@127.0.0.1:%d' % port
                for port in RABBIT_PORTS.values()), name)
        finally:
            self.rabbit_ctl('delete_vhost', name)

    @contextlib.contextmanager
    def database(self):
        """A fresh database on the cluster; yields ``url(node)``, its
        connection URL through that node (0: through the proxy)."""
        name = infra.unique_name('db')
        engine = sa.create_engine(db_url(0, ''), poolclass=sa.pool.NullPool)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(
                    'CREATE DATABASE %s CHARACTER SET utf8mb4' % name)
            yield lambda node: db_url(node, name)
            with engine.begin() as conn:
                conn.exec_driver_sql('DROP DATABASE %s' % name)
        finally:
            engine.dispose()


def db_url(node, name):
    port = GALERA_PORTS[node] if node else GALERA_PROXY_PORT
    return 'mysql+pymysql://%s:%s@127.0.0.1:%d/%s?charset=utf8mb4' % (
        DB_USER, DB_PASSWORD, port, name)
