"""The ``rollout`` scenario: one fleet rollout of a bitstream over
``--hosts`` x ``--devices-per-host`` FPGA regions (docs/rollouts.md).

In one process, on a fresh MariaDB or PostgreSQL database: the fleet is
reported by the real inventory reconcile (each host one FPGA of
``--devices-per-host`` regions, all holding ``bs-old``); a real
``ConductorManager`` (work queue, program operations, the rollout
periodic) drives the rollout; the agents are simulated: an agent API whose
``program`` sleeps ``--program-seconds`` and answers as a real agent does
(the same simulated agent as bench/simagent.py's ``AgentEndpoint.program``,
called in process instead of over RabbitMQ: 1,250 RPC servers would
measure the broker, not the rollout).

The rollout periodic runs every ``--interval`` seconds until the rollout
ends. Reported: devices changed per minute, the conductor's CPU (the
periodic's own thread, and the whole process: workers writing the
operations' ends included), and queries per step and per wave (the
periodic's alone, and everything the process sent).
"""

import collections
import concurrent.futures
import tempfile
import threading
import time

import sqlalchemy as sa

from bench import infra
from bench import simagent

IMAGE = 'bs-new'


class SimulatedAgents:
    """The agent RPC API of every host, answered in process."""

    def __init__(self, program_seconds):
        self.program_seconds = program_seconds
        self.counters = {}
        self._endpoint = simagent.AgentEndpoint('any', self.counters,
                                                lambda host: None)

    def program(self, context, host, job, timeout):
        time.sleep(self.program_seconds)
        return self._endpoint.program(context, job)


def _region_inventory(devices_per_host):
    from cyborg_like.common import inventory as wire
    return [{
        'type': 'FPGA', 'vendor': '0x8086', 'model': 'Bench N3000',
        'controlpath_id': {'cpid_type': 'PCI', 'cpid_info':
                           wire.pci_address_info('0000:5e:00.0')},
        'deployables': [{
            'name': 'region%d' % r, 'num_accelerators': 1,
            'driver_name': 'fake', 'bitstream_id': 'bs-old',
            'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_BENCH'},
            'attach_handles': [{'attach_type': 'PCI', 'attach_info':
                                wire.pci_address_info(
                                    '0000:5e:%02x.%d' % (r // 8 + 1,
                                                         r % 8))}]}
            for r in range(devices_per_host)]}]


class Queries:
    """Statements sent, all and those of one thread (the periodic's)."""

    def __init__(self, engine):
        self.engine = engine
        self.lock = threading.Lock()
        self.total = 0
        self.mine = 0
        self.thread = None

    def __enter__(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self._count)
        return self

    def __exit__(self, *exc):
        sa.event.remove(self.engine, 'before_cursor_execute', self._count)

    def _count(self, conn, cursor, statement, *args):
        if statement.split(None, 1)[0].upper() not in (
                'SELECT', 'INSERT', 'UPDATE', 'DELETE') or \
                statement.strip().upper() == 'SELECT 1':
            return
        with self.lock:
            self.total += 1
            if threading.get_ident() == self.thread:
                self.mine += 1


def run(args):
    from cyborg_like.common import context as context_lib
    from cyborg_like.conductor import manager as manager_lib
    from cyborg_like.conductor import workqueue
    from cyborg_like.conf import CONF
    from cyborg_like.db import api as db_api
    from cyborg_like.db import conductors
    from cyborg_like.db import inventory
    from cyborg_like.db import migration
    from cyborg_like.db import rollouts

    results = {'scenario': 'rollout', 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}}
    with infra.fresh_database(args.backend) as db_url:
        CONF.set_override('connection', db_url, group='database')
        CONF.set_override('max_queued_work', args.max_queued_work,
                          group='conductor')
        CONF.set_override('workers', args.workers, group='conductor')
        db_api.dispose()
        try:
            migration.upgrade()
            started = time.monotonic()
            devices = _region_inventory(args.devices_per_host)
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                list(pool.map(
                    lambda n: inventory.reconcile(simagent.host_name(n),
                                                  devices, 'h%d' % n),
                    range(args.hosts)))
            results['fleet_seconds'] = round(time.monotonic() - started, 1)
            infra.log('fleet of %d regions on %d hosts reported in %.1fs',
                      args.hosts * args.devices_per_host, args.hosts,
                      results['fleet_seconds'])
            results.update(_roll(args, CONF, context_lib, manager_lib,
                                 workqueue, db_api, conductors, rollouts))
        finally:
            db_api.dispose()
            for name, group in (('connection', 'database'),
                                ('max_queued_work', 'conductor'),
                                ('workers', 'conductor')):
                CONF.clear_override(name, group=group)
    results['workdir'] = args.workdir or tempfile.mkdtemp(
        prefix='bench-rollout-')
    return results


def _roll(args, conf, context_lib, manager_lib, workqueue, db_api,
          conductors, rollouts):
    uuid = '00000000-0000-4000-8000-0000000be7c0'
    conductors.beat(uuid, 'bench')
    agents = SimulatedAgents(args.program_seconds)
    workers = workqueue.WorkQueue(conf.conductor.workers,
                                  conf.conductor.max_queued_work)
    manager = manager_lib.ConductorManager(conf, agents, workers, None, uuid)
    context = context_lib.get_admin_context()
    began = time.monotonic()
    with Queries(db_api.get_engine()) as queries:
        queries.thread = threading.get_ident()
        rollout = manager.create_rollout(context, {
            'kind': 'bitstream', 'image': IMAGE,
            'strategy': {'canary': args.canary, 'waves': [args.wave],
                         'max_unavailable': args.max_unavailable,
                         'max_unavailable_per_host': args.per_host}})
        create_seconds = time.monotonic() - began
        create_queries = queries.mine
        infra.log('rollout %s of %d targets in %d waves created in %.2fs '
                  '(%d queries)', rollout['uuid'],
                  rollout['targets']['total'], rollout['waves'],
                  create_seconds, create_queries)
        waves = collections.OrderedDict()
        steps = []
        process_cpu = time.process_time()
        started = time.monotonic()
        state = rollout['state']
        while state == 'running' and \
                time.monotonic() - started < args.max_seconds:
            wave = rollouts.get(rollout['uuid'])['current_wave']
            mine, total = queries.mine, queries.total
            cpu = time.thread_time()
            step_began = time.monotonic()
            manager.rollouts.run()
            step = {'wave': wave,
                    'seconds': time.monotonic() - step_began,
                    'cpu': time.thread_time() - cpu,
                    'queries': queries.mine - mine}
            steps.append(step)
            shown = rollouts.get(rollout['uuid'])
            state = shown['state']
            entry = waves.setdefault(wave, {
                'wave': wave, 'steps': 0, 'step_queries': 0,
                'all_queries': 0, 'step_cpu_s': 0.0, 'began': step_began})
            entry['steps'] += 1
            entry['step_queries'] += step['queries']
            entry['all_queries'] += queries.total - total
            entry['step_cpu_s'] += step['cpu']
            time.sleep(max(0.0, args.interval - step['seconds']))
        wall = time.monotonic() - started
        process_cpu = time.process_time() - process_cpu
    workers.shutdown(wait=True)
    final = rollouts.get(rollout['uuid'])
    changed = final['targets'].get('done', 0)
    per_wave = []
    for entry in waves.values():
        per_wave.append({
            'wave': entry['wave'], 'steps': entry['steps'],
            'periodic_queries': entry['step_queries'],
            'periodic_queries_per_step': round(
                entry['step_queries'] / entry['steps'], 1),
            'all_queries': entry['all_queries'],
            'periodic_cpu_s': round(entry['step_cpu_s'], 3)})
    fixed = sorted(s['queries'] for s in steps if not s['queries'] % 1)[:1]
    summary = {
        'state': final['state'], 'targets': final['targets'],
        'waves': final['waves'] + 1,
        'wall_seconds': round(wall, 1),
        'devices_changed_per_minute': round(changed / wall * 60, 1),
        'periodic_cpu_seconds': round(sum(s['cpu'] for s in steps), 2),
        'process_cpu_seconds': round(process_cpu, 2),
        'process_cpu_percent_of_one_core': round(100 * process_cpu / wall,
                                                 1),
        'steps': len(steps),
        'fewest_queries_in_a_step': fixed[0] if fixed else None,
        'create_seconds': round(create_seconds, 2),
        'create_queries': create_queries,
        'programs_answered': agents.counters.get('program', 0),
    }
    infra.log('rollout %s: %s', final['state'], summary)
    return {'summary': summary, 'waves': per_wave}
