"""Our agent for ``compare``: reports a fixture's inventory, serves the
agent RPC API of its hosts, heartbeats.

``python -m bench.compare_agent --config-file FILE --inventory JSON
[--serve-hosts N] [--heartbeat-interval S]``: the inventory file maps host
-> devices (bench.compare_fixtures.our_inventory). Like bench.simagent it
speaks to the conductor only through ``ConductorAPI`` after
``cyborg_like.common.rpc.init``; it serves ``prepare_attach_handle`` and the
rest (no hardware behind them) for the first ``--serve-hosts`` hosts, and
sends one heartbeat for each of those every ``--heartbeat-interval`` s
(the other hosts are only reported: the run sets ``host_down_after`` past
its end). Logs ``SIMAGENT READY {...}`` once the inventory is in; stops on
SIGTERM.
"""

import argparse
import json
import signal
import sys
import threading
import time
from concurrent import futures


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.compare_agent')
    parser.add_argument('--inventory', required=True)
    parser.add_argument('--serve-hosts', type=int, default=1)
    parser.add_argument('--report-threads', type=int, default=4)
    parser.add_argument('--heartbeat-interval', type=float, default=20.0)
    args, rest = parser.parse_known_args(argv)

    import oslo_messaging as messaging

    from bench.simagent import AgentEndpoint
    from cyborg_like.agent import rpcapi as agent_rpcapi
    from cyborg_like.cmd import common
    from cyborg_like.common import context as ctx
    from cyborg_like.common import inventory
    from cyborg_like.common import rpc
    from cyborg_like.conductor import rpcapi

    conf = common.prepare(rest)
    rpc.init(conf)
    conductor = rpcapi.ConductorAPI(timeout=conf.agent.report_timeout)
    admin = ctx.get_admin_context()
    with open(args.inventory) as f:
        hosts = json.load(f)
    digests = {h: inventory.fingerprint(devs) for h, devs in hosts.items()}
    names = sorted(hosts)
    calls = {}
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())

    def report(host):
        conductor.report_inventory(admin, host, hosts[host], digests[host])

    servers = []
    for host in names[:args.serve_hosts]:
        target = messaging.Target(topic=agent_rpcapi.TOPIC, server=host)
        server = rpc.get_server(target, [AgentEndpoint(host, calls, report)])
        server.start()
        servers.append(server)
    began = time.monotonic()
    with futures.ThreadPoolExecutor(args.report_threads) as pool:
        list(pool.map(report, names))
    took = time.monotonic() - began
    info = {'hosts': len(names),
            'devices': sum(len(d) for d in hosts.values()),
            'report_seconds': round(took, 2)}
    sys.stderr.write('SIMAGENT READY %s\n' % json.dumps(info))
    sys.stderr.flush()
    while not stop.wait(args.heartbeat_interval):
        for host in names[:args.serve_hosts]:
            health = [{'controlpath_id': d['controlpath_id'],
                       'healthy': True, 'reasons': []}
                      for d in hosts[host]]
            try:
                conductor.heartbeat(admin, host, '1.0', digests[host], health)
            except Exception as exc:     # noqa: BLE001 - logged, goes on
                sys.stderr.write('heartbeat of %s failed: %s\n' % (host, exc))
    for server in servers:
        server.stop()
        server.wait()
    sys.stderr.write('SIMAGENT DONE %s\n' % json.dumps(calls))
    rpc.cleanup()


if __name__ == '__main__':
    main()
