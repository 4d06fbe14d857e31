"""``python -m bench {api,heartbeats} [options]``; ``--help`` for each."""

import argparse
import datetime
import json
import os
import signal
import sys
import time

from bench import infra


def _common(parser):
    parser.add_argument('--backend', choices=('mariadb', 'postgresql'),
                        default='mariadb')
    parser.add_argument('--workdir',
                        help='where logs, config and results go (default: '
                             'a new temporary directory)')
    parser.add_argument('--output',
                        help='write the results as JSON here too')
    parser.add_argument('--profile', action='store_true',
                        help='sample the API and conductor with py-spy '
                             'during the measurements')
    parser.add_argument('--db-option', action='append', metavar='KEY=VALUE',
                        help='a line for the conductor\'s [database] '
                             'section, e.g. max_pool_size=32 (repeatable)')
    parser.add_argument('--api-env', action='append', metavar='KEY=VALUE',
                        help='environment of the API process, e.g. '
                             'MALLOC_ARENA_MAX=2 (repeatable)')


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m bench',
        description='Benchmarks of cyborg_like on real RabbitMQ and '
                    'MariaDB/PostgreSQL. Every run is bounded in time and '
                    'requests and uses loopback only.')
    sub = parser.add_subparsers(dest='scenario', required=True)

    api = sub.add_parser('api', help='list throughput/latency, ARQ cycles, '
                                     'API RSS, 1k vs 10k devices, gunicorn')
    _common(api)
    api.add_argument('--small', type=int, default=1000,
                     help='devices of the first inventory')
    api.add_argument('--large', type=int, default=10000,
                     help='devices of the second inventory (0: skip)')
    api.add_argument('--devices-per-host', type=int, default=8)
    api.add_argument('--serve-hosts', type=int, default=8,
                     help='simulated hosts that answer agent RPC (binds)')
    api.add_argument('--report-threads', type=int, default=4)
    api.add_argument('--profiles', type=int, default=100,
                     help='device profiles to create')
    api.add_argument('--duration', type=int, default=10,
                     help='seconds of each wrk run')
    api.add_argument('--connections', type=int, default=8)
    api.add_argument('--post-seconds', type=int, default=10)
    api.add_argument('--cycle-seconds', type=int, default=30,
                     help='0: no ARQ cycles')
    api.add_argument('--lists', help='comma-separated lists to measure at '
                                     'the first size (default: all four)')
    api.add_argument('--cycle-threads', type=int, default=8)
    api.add_argument('--max-cycles', type=int, default=20000)
    api.add_argument('--gunicorn-workers', type=int, default=2,
                     help='0: skip the gunicorn form')
    api.add_argument('--gunicorn-threads', type=int, default=8)
    api.set_defaults(module='scenario_api')

    hb = sub.add_parser('heartbeats', help='device-utilization updates '
                                           'ingested per second, and lag')
    _common(hb)
    hb.add_argument('--hosts', type=int, default=2000)
    hb.add_argument('--devices-per-host', type=int, default=8)
    hb.add_argument('--intervals', default='4,2,1',
                    help='heartbeat intervals (s) to run in turn, comma '
                         'separated; offered updates/s = hosts * '
                         'devices-per-host / interval')
    hb.add_argument('--duration', type=int, default=30,
                    help='seconds of heartbeats at each interval')
    hb.add_argument('--agent-procs', type=int, default=2,
                    help='simulated agent processes sending heartbeats')
    hb.add_argument('--heartbeat-threads', type=int, default=16,
                    help='threads per agent process')
    hb.add_argument('--flush-interval', type=float, default=1.0,
                    help='[conductor] heartbeat_flush_interval')
    hb.add_argument('--report-threads', type=int, default=4)
    hb.add_argument('--sample-devices', type=int, default=4,
                    help='devices whose /health the lag probe polls')
    hb.add_argument('--modes', default='stream',
                    help='how heartbeats are sent, comma separated, each '
                         'run at every interval in turn: stream, cast or '
                         "call ([agent] heartbeat_delivery), or "
                         'stream-backlog (streamed beats worth 600 s: once '
                         'the senders stop, the conductors work off what '
                         'is queued alone, and that rate is measured)')
    hb.add_argument('--conductors', type=int, default=1,
                    help='conductor processes sharing the heartbeats')
    hb.add_argument('--conductor-counts',
                    help='comma separated: run each interval and mode with '
                         'this many of the --conductors running in turn '
                         '(default: all of them)')
    hb.add_argument('--pin-conductors', action='store_true',
                    help='each conductor on a CPU of its own')
    hb.set_defaults(module='scenario_heartbeats')

    metrics = sub.add_parser('metrics', help='scraping a conductor\'s '
                                             '/metrics with a large fleet, '
                                             'and heartbeat ingest with and '
                                             'without a scraper')
    _common(metrics)
    metrics.add_argument('--hosts', type=int, default=1250)
    metrics.add_argument('--devices-per-host', type=int, default=8)
    metrics.add_argument('--interval', type=float, default=2.0,
                         help='heartbeat interval (s) of the runs')
    metrics.add_argument('--duration', type=int, default=20,
                         help='seconds of heartbeats per run')
    metrics.add_argument('--agent-procs', type=int, default=2)
    metrics.add_argument('--heartbeat-threads', type=int, default=16)
    metrics.add_argument('--flush-interval', type=float, default=1.0)
    metrics.add_argument('--report-threads', type=int, default=4)
    metrics.add_argument('--sample-devices', type=int, default=4)
    metrics.add_argument('--scrapes', type=int, default=20,
                         help='scrapes one after the other')
    metrics.add_argument('--scrape-interval', type=float, default=1.0,
                         help='seconds between scrapes during the run '
                              'with a scraper')
    metrics.add_argument('--cache-seconds', type=int, default=0,
                         help='[metrics] fleet_cache_seconds (0: a '
                              'snapshot per scrape)')
    metrics.set_defaults(module='scenario_metrics')

    floor = sub.add_parser('floor', help='the API\'s own CPU per request '
                                        'without RPC (in process, a '
                                        'conductor that answers at once)')
    floor.add_argument('--requests', type=int, default=2000)
    floor.add_argument('--cprofile', action='store_true',
                       help='print the top functions of GET /v2/devices')
    floor.add_argument('--output', help='write the results as JSON here too')
    floor.set_defaults(module='scenario_floor')

    feed = sub.add_parser('availability', help='the availability feed '
                                                '(full, 304, delta) with a '
                                                'large fleet')
    _common(feed)
    feed.add_argument('--hosts', type=int, default=1250)
    feed.add_argument('--devices-per-host', type=int, default=8)
    feed.add_argument('--interval', type=float, default=5.0,
                      help='heartbeat interval (s) of the run that marks '
                           'the hosts up')
    feed.add_argument('--duration', type=int, default=15,
                      help='seconds of each wrk run')
    feed.add_argument('--connections', type=int, default=8)
    feed.add_argument('--agent-procs', type=int, default=2)
    feed.add_argument('--heartbeat-threads', type=int, default=16)
    feed.add_argument('--flush-interval', type=float, default=1.0)
    feed.add_argument('--report-threads', type=int, default=4)
    feed.add_argument('--sample-devices', type=int, default=4)
    feed.set_defaults(module='scenario_availability')

    sched = sub.add_parser('scheduling', help='ARQ cycles bound as Nova '
                                             'binds and standalone '
                                             '(POST .../schedule), '
                                             'interleaved rounds')
    _common(sched)
    sched.add_argument('--hosts', type=int, default=125)
    sched.add_argument('--devices-per-host', type=int, default=8)
    sched.add_argument('--cycle-threads', type=int, default=8,
                       help='client threads, each on its own host')
    sched.add_argument('--cycle-seconds', type=int, default=20)
    sched.add_argument('--max-cycles', type=int, default=20000)
    sched.add_argument('--rounds', type=int, default=2)
    sched.set_defaults(module='scenario_scheduling')

    roll = sub.add_parser('rollout', help='one fleet rollout of a '
                                          'bitstream (canary, waves) with '
                                          'simulated agents, in process: '
                                          'devices changed per minute, '
                                          'conductor CPU, queries per wave')
    _common(roll)
    roll.add_argument('--hosts', type=int, default=1250)
    roll.add_argument('--devices-per-host', type=int, default=8,
                      help='FPGA regions per host')
    roll.add_argument('--canary', default='1%')
    roll.add_argument('--wave', default='10%',
                      help='size of every wave after the canary')
    roll.add_argument('--max-unavailable', type=int, default=200)
    roll.add_argument('--per-host', type=int, default=8,
                      help='max_unavailable_per_host')
    roll.add_argument('--program-seconds', type=float, default=0.5,
                      help='how long a simulated agent takes to program')
    roll.add_argument('--interval', type=float, default=1.0,
                      help='seconds between steps ([rollouts] interval)')
    roll.add_argument('--workers', type=int, default=64,
                      help='[conductor] workers')
    roll.add_argument('--max-queued-work', type=int, default=256,
                      help='[conductor] max_queued_work')
    roll.add_argument('--max-seconds', type=int, default=1800)
    roll.set_defaults(module='scenario_rollout')

    flush = sub.add_parser('flush', help='one heartbeat flush\'s CPU and '
                                         'wall time per reading, in '
                                         'process')
    _common(flush)
    from bench import scenario_flush
    scenario_flush.add_arguments(flush)

    compare = sub.add_parser('compare', help='cyborg_like and OpenStack '
                                             'Cyborg 17 side by side, '
                                             'interleaved rounds, one table')
    from bench import scenario_compare
    scenario_compare.add_arguments(compare)

    serve = sub.add_parser('serve', help='the deployment alone, left '
                                         'running for poking at by hand')
    _common(serve)
    serve.add_argument('--devices', type=int, default=1000)
    serve.add_argument('--devices-per-host', type=int, default=8)
    serve.add_argument('--serve-hosts', type=int, default=8)
    serve.add_argument('--gunicorn-workers', type=int, default=0)
    serve.add_argument('--seconds', type=int, default=600)
    serve.set_defaults(module='scenario_serve')

    report = sub.add_parser('report', help='results JSON as Markdown '
                                           'tables')
    report.add_argument('results', nargs='+')

    args = parser.parse_args(argv)
    if args.scenario == 'report':
        from bench import report as report_module
        report_module.main(args.results)
        return

    def _stop(signum, frame):
        # Unwind, so the services stop and the vhost and database go.
        raise SystemExit('stopped by signal %d' % signum)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    import importlib
    module = importlib.import_module('bench.' + args.module)
    started = datetime.datetime.now(datetime.timezone.utc)
    began = time.monotonic()
    results = module.run(args)
    results['command'] = ' '.join(
        ['.venv/bin/python -m bench'] + (argv or sys.argv[1:]))
    results['started'] = started.isoformat(timespec='seconds')
    results['wall_seconds'] = round(time.monotonic() - began, 1)
    results['machine'] = infra.machine_facts()
    text = json.dumps(results, indent=1, default=str)
    path = os.path.join(results['workdir'], 'results.json')
    with open(path, 'w') as f:
        f.write(text)
    if args.output:
        with open(args.output, 'w') as f:
            f.write(text)
    print(text)
    infra.log('results written to %s', args.output or path)


if __name__ == '__main__':
    main()
