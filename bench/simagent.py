"""Simulated agents: many hosts' inventories and heartbeats, one process.

Run by the scenarios as ``python -m bench.simagent --config-file FILE
[options]``. It speaks to the conductor only through
``cyborg_like.conductor.rpcapi.ConductorAPI`` after
``cyborg_like.common.rpc.init`` (what a real agent does):

1. reports the inventory of hosts ``first_host .. first_host + hosts - 1``
   (``report_inventory``, ``devices_per_host`` fake GPUs each), with
   ``report_threads`` calls in flight;
2. serves the agent RPC topic for the first ``serve_hosts`` of them
   (prepare/release attach handle, program, resync), so accelerator
   requests can be bound to their deployables;
3. sends a heartbeat for every host each ``heartbeat_interval`` seconds,
   carrying one health reading per device (healthy, utilization with the
   wall-clock time it was sent, for measuring lag), from
   ``heartbeat_threads`` threads, until ``duration`` seconds passed or
   SIGTERM.

It logs ``SIMAGENT READY`` when the inventory is in, and writes what it did
(reports, heartbeats sent, call latencies, errors) as JSON to
``result_file`` when it ends.
"""

import argparse
import json
import signal
import sys
import threading
import time

HOST_FORMAT = 'bench-host-%05d'


def host_name(index):
    return HOST_FORMAT % index


def cpid(index):
    bus = '%02x' % (index // 32 + 1)
    dev = '%02x' % (index % 32)
    return {'cpid_type': 'PCI',
            'cpid_info': {'domain': '0000', 'bus': bus, 'device': dev,
                          'function': '0'}}


def host_inventory(devices_per_host):
    """The (sorted, as the agent sends it) devices of one host: GPUs with
    one deployable and one PCI attach handle each."""
    from cyborg_like.common import inventory
    devices = []
    for i in range(devices_per_host):
        cp = cpid(i)
        devices.append({
            'type': 'GPU', 'vendor': '0x10de', 'model': 'Bench T4',
            'std_board_info': {'device_id': '0x1eb8', 'class': '0x030200'},
            'vendor_board_info': {'serial': 'bench-%04d' % i},
            'controlpath_id': cp,
            'deployables': [{
                'name': 'gpu0', 'num_accelerators': 1,
                'driver_name': 'fake', 'bitstream_id': None,
                'attributes': {'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_BENCH'},
                'attach_handles': [{'attach_type': 'PCI',
                                    'attach_info': dict(cp['cpid_info'])}],
            }],
        })
    return sorted(devices,
                  key=lambda d: inventory.canonical(d['controlpath_id']))


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = []
        self.errors = 0
        self.error_samples = []
        self.sent = 0
        self.readings = 0
        self.per_second = {}

    def ok(self, latency, readings):
        second = int(time.time())
        with self.lock:
            self.sent += 1
            self.readings += readings
            self.latencies.append(latency)
            self.per_second[second] = self.per_second.get(second, 0) + 1

    def error(self, exc):
        with self.lock:
            self.errors += 1
            if len(self.error_samples) < 5:
                self.error_samples.append('%s: %s' % (type(exc).__name__,
                                                      str(exc)[:200]))

    def summary(self):
        with self.lock:
            lat = sorted(self.latencies)
        return {'sent': self.sent, 'readings': self.readings,
                'errors': self.errors, 'error_samples': self.error_samples,
                'latency_ms': percentiles(lat)}


def percentiles(values):
    if not values:
        return {}
    values = sorted(values)

    def at(p):
        return round(values[min(len(values) - 1,
                                int(p / 100.0 * len(values)))] * 1000, 2)
    return {'p50': at(50), 'p90': at(90), 'p99': at(99),
            'max': round(values[-1] * 1000, 2), 'count': len(values)}


class AgentEndpoint:
    """The agent RPC API of one simulated host (no hardware behind it)."""

    _lock = threading.Lock()

    def __init__(self, host, counters, resync):
        import oslo_messaging as messaging
        from cyborg_like.agent import rpcapi as agent_rpcapi
        self.target = messaging.Target(version=agent_rpcapi.RPC_API_VERSION)
        self.host = host
        self.counters = counters
        self._resync = resync

    def _count(self, name):
        with self._lock:
            self.counters[name] = self.counters.get(name, 0) + 1

    def prepare_attach_handle(self, context, job):
        self._count('prepare_attach_handle')
        return job.get('bitstream_id') or None

    def release_attach_handle(self, context, released):
        self._count('release_attach_handle')

    def program(self, context, job):
        self._count('program')
        return job['bitstream_id']

    def resync_inventory(self, context):
        self._count('resync_inventory')
        self._resync(self.host)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.simagent')
    parser.add_argument('--first-host', type=int, default=0)
    parser.add_argument('--hosts', type=int, default=100)
    parser.add_argument('--devices-per-host', type=int, default=8)
    parser.add_argument('--report-threads', type=int, default=4)
    parser.add_argument('--serve-hosts', type=int, default=0)
    parser.add_argument('--heartbeat-interval', type=float, default=10.0)
    parser.add_argument('--heartbeat-threads', type=int, default=8)
    parser.add_argument('--heartbeat-delivery', default='call',
                        choices=('call', 'cast', 'stream'),
                        help='as [agent] heartbeat_delivery: a call, a cast '
                             'or a beat on the heartbeat stream, the last two '
                             'with a deadline two intervals away')
    parser.add_argument('--heartbeat-ttl', type=float, default=0.0,
                        help='seconds a cast or streamed beat is worth '
                             '(0: two intervals, as the agent sends them)')
    parser.add_argument('--heartbeat-start', type=float, default=0.0,
                        help='wall-clock time to start heartbeats at '
                             '(0: at once)')
    parser.add_argument('--duration', type=float, default=0.0,
                        help='seconds of heartbeats; 0: until SIGTERM')
    parser.add_argument('--no-report', action='store_true',
                        help='the inventory is already in the database')
    parser.add_argument('--report-only', action='store_true',
                        help='report the inventory, then end')
    parser.add_argument('--result-file')
    args, rest = parser.parse_known_args(argv)

    from cyborg_like.cmd import common
    from cyborg_like.common import context as ctx
    from cyborg_like.common import inventory
    from cyborg_like.common import rpc
    from cyborg_like.conductor import rpcapi

    conf = common.prepare(rest)
    rpc.init(conf)
    conductor = rpcapi.ConductorAPI(timeout=conf.agent.report_timeout)
    admin = ctx.get_admin_context()

    devices = host_inventory(args.devices_per_host)
    digest = inventory.fingerprint(devices)
    hosts = [host_name(i) for i in range(args.first_host,
                                         args.first_host + args.hosts)]
    result = {'hosts': len(hosts), 'devices_per_host': args.devices_per_host,
              'agent_calls': {}}
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())

    def report(host):
        conductor.report_inventory(admin, host, devices, digest)

    # Agent RPC servers first: the conductor may call them as soon as the
    # hosts exist.
    servers = []
    import oslo_messaging as messaging
    from cyborg_like.agent import rpcapi as agent_rpcapi
    for host in hosts[:args.serve_hosts]:
        target = messaging.Target(topic=agent_rpcapi.TOPIC, server=host)
        server = rpc.get_server(target, [AgentEndpoint(
            host, result['agent_calls'], report)])
        server.start()
        servers.append(server)

    if not args.no_report:
        from concurrent import futures
        began = time.monotonic()
        with futures.ThreadPoolExecutor(args.report_threads) as pool:
            for done in pool.map(report, hosts):
                pass
        took = time.monotonic() - began
        result['report'] = {
            'seconds': round(took, 2),
            'hosts_per_s': round(len(hosts) / took, 1),
            'devices_per_s': round(len(hosts) * len(devices) / took, 1)}
    sys.stderr.write('SIMAGENT READY %s\n' % json.dumps(result))
    sys.stderr.flush()

    if args.report_only:
        for server in servers:
            server.stop()
            server.wait()
        if args.result_file:
            with open(args.result_file, 'w') as f:
                json.dump(result, f, indent=1)
        sys.stderr.write('SIMAGENT DONE\n')
        rpc.cleanup()
        return

    stats = Stats()
    readings_template = [
        {'controlpath_id': d['controlpath_id'], 'healthy': True,
         'reasons': []} for d in devices]

    ttl = args.heartbeat_ttl or 2 * args.heartbeat_interval
    delivery = {'cast': {'cast_ttl': ttl}, 'stream': {'stream_ttl': ttl},
                'call': {}}[args.heartbeat_delivery]

    def beat(host, seq):
        sent_at = time.time()
        health = [dict(r, utilization={
            'gpu_percent': (seq + i) % 100, 'memory_percent': 40,
            'bench_sent_at': sent_at, 'bench_seq': seq})
            for i, r in enumerate(readings_template)]
        began = time.monotonic()
        conductor.heartbeat(admin, host, '1.0', digest, health,
                            **delivery)
        stats.ok(time.monotonic() - began, len(health))

    def heartbeats(my_hosts, offset):
        start = args.heartbeat_start or time.time()
        while time.time() < start and not stop.is_set():
            stop.wait(min(0.05, start - time.time()))
        step = args.heartbeat_interval / max(1, len(my_hosts))
        seq = 0
        due = time.monotonic() + offset
        while not stop.is_set():
            for host in my_hosts:
                delay = due - time.monotonic()
                if delay > 0 and stop.wait(delay):
                    return
                try:
                    beat(host, seq)
                except Exception as exc:     # noqa: BLE001 - counted
                    stats.error(exc)
                due += step
            seq += 1

    threads_n = max(1, min(args.heartbeat_threads, len(hosts)))
    interval = args.heartbeat_interval
    threads = []
    for t in range(threads_n):
        mine = hosts[t::threads_n]
        th = threading.Thread(target=heartbeats,
                              args=(mine, interval * t / threads_n /
                                    max(1, len(mine))), daemon=True)
        th.start()
        threads.append(th)
    began = time.time()
    if args.duration:
        stop.wait(max(0.0, (args.heartbeat_start or began) - began)
                  + args.duration)
        stop.set()
    else:
        while not stop.wait(1.0):
            pass
    for th in threads:
        th.join(timeout=60)
    ended = time.time()
    result['heartbeats'] = stats.summary()
    first = args.heartbeat_start or began
    result['heartbeats']['seconds'] = round(ended - first, 2)
    result['heartbeats']['per_second'] = sorted(stats.per_second.items())
    result['cpu_seconds'] = round(time.process_time(), 2)
    for server in servers:
        server.stop()
        server.wait()
    if args.result_file:
        with open(args.result_file, 'w') as f:
            json.dump(result, f, indent=1)
    sys.stderr.write('SIMAGENT DONE\n')
    rpc.cleanup()


if __name__ == '__main__':
    main()
