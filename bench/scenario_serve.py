"""The ``serve`` scenario: the deployment of the benchmarks, left running
for ``--seconds`` (bounded) for poking at by hand: conductor and API on a
fresh vhost and database, ``--devices`` simulated devices whose hosts stay
up. Prints the API URL and the database URL."""

import time

from bench import infra


def run(args):
    per_host = args.devices_per_host
    hosts = max(1, args.devices // per_host)
    with infra.deployment(
            args, host_down_after=300,
            gunicorn_workers=args.gunicorn_workers) as dep:
        agents, _ = infra.simagent(
            dep, 'simagent', hosts=hosts, devices_per_host=per_host,
            serve_hosts=args.serve_hosts, heartbeat_interval=20,
            heartbeat_threads=2, timeout=1800)
        info = infra.simagent_ready_info(agents)
        infra.log('API %s  database %s  conductor pid %s  api pids %s',
                  dep.api_url, dep.db_url, dep.services['conductor'].pid,
                  dep.services['api'].pids())
        infra.log('inventory: %s; serving for %ds (Ctrl-C stops)', info,
                  args.seconds)
        print('API_URL=%s' % dep.api_url, flush=True)
        print('DB_URL=%s' % dep.db_url, flush=True)
        try:
            time.sleep(args.seconds)
        except KeyboardInterrupt:
            pass
        return {'scenario': 'serve', 'workdir': dep.workdir,
                'inventory': info}
