"""The ``flush`` scenario: one heartbeat flush's cost, in this process.

``--hosts`` inventories of ``--devices-per-host`` GPUs are reconciled into
a fresh database (MariaDB by default); then ``--rounds`` flushes of one
beat per host (one reading per device, as the simulated agents send them)
go through ``db/heartbeats.ingest``, the conductor's write. Reported: CPU
of this process (process time: what the conductor would spend) and wall
time per reading, the median of the rounds; ``--cprofile`` prints the
top functions of one more round.
"""

import cProfile
import datetime
import io
import pstats
import statistics
import tempfile
import time

from bench import infra
from bench import simagent


def add_arguments(parser):
    parser.add_argument('--hosts', type=int, default=2000)
    parser.add_argument('--devices-per-host', type=int, default=8)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--cprofile', action='store_true')
    parser.set_defaults(module='scenario_flush')


def _beats(hosts, devices_per_host, digest, seq):
    now = datetime.datetime.utcnow().replace(microsecond=0)
    return [{'host': host, 'agent_version': '1.0', 'inventory_hash': digest,
             'received_at': now,
             'health': [{'controlpath_id': simagent.cpid(i),
                         'healthy': True, 'reasons': [],
                         'utilization': {'gpu_percent': (seq + i) % 100,
                                         'memory_percent': 40}}
                        for i in range(devices_per_host)]}
            for host in hosts]


def run(args):
    from cyborg_like.common import inventory
    from cyborg_like.conductor import drain_breaker
    from cyborg_like.conf import CONF
    from cyborg_like.db import api as db_api
    from cyborg_like.db import heartbeats
    from cyborg_like.db import inventory as db_inventory
    from cyborg_like.db import migration

    workdir = args.workdir or tempfile.mkdtemp(prefix='cyborg_like_flush_')
    results = {'scenario': 'flush', 'workdir': workdir, 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}}
    devices = simagent.host_inventory(args.devices_per_host)
    digest = inventory.fingerprint(devices)
    hosts = [simagent.host_name(i) for i in range(args.hosts)]
    readings = args.hosts * args.devices_per_host
    breaker = drain_breaker.DrainBreaker(CONF.health)
    with infra.fresh_database(args.backend) as db_url:
        CONF.set_override('connection', db_url, group='database')
        db_api.dispose()
        try:
            migration.upgrade()
            began = time.monotonic()
            for host in hosts:
                db_inventory.reconcile(host, devices, digest)
            infra.log('%d devices on %d hosts in %.1f s', readings,
                      args.hosts, time.monotonic() - began)
            cpu, wall = [], []
            for seq in range(args.rounds + 1):
                beats = _beats(hosts, args.devices_per_host, digest, seq)
                c0, w0 = time.process_time(), time.monotonic()
                heartbeats.ingest(beats, 3600, breaker)
                if seq:         # the first warms the pool and caches
                    cpu.append(time.process_time() - c0)
                    wall.append(time.monotonic() - w0)
            results['cpu_us_per_reading'] = round(
                statistics.median(cpu) * 1e6 / readings, 1)
            results['wall_us_per_reading'] = round(
                statistics.median(wall) * 1e6 / readings, 1)
            results['readings_per_flush'] = readings
            infra.log('flush of %d readings: CPU %.1f us, wall %.1f us per '
                      'reading (medians of %d)', readings,
                      results['cpu_us_per_reading'],
                      results['wall_us_per_reading'], args.rounds)
            if args.cprofile:
                prof = cProfile.Profile()
                beats = _beats(hosts, args.devices_per_host, digest, 99)
                prof.runcall(heartbeats.ingest, beats, 3600, breaker)
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats(
                    'tottime').print_stats(25)
                print(out.getvalue())
        finally:
            db_api.dispose()
            CONF.clear_override('connection', group='database')
    return results
