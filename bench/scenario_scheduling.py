"""The ``scheduling`` scenario: ARQ cycles bound as Nova binds and bound
standalone, side by side on one deployment (docs/scheduling.md).

1. conductor + API on a fresh vhost and database; one simulated agent
   process reports ``--hosts`` x ``--devices-per-host`` devices and answers
   the agent RPC API of the first ``--cycle-threads`` hosts;
2. the bench profile (one PGPU with a required trait);
3. ``--rounds`` interleaved rounds of ``--cycle-seconds`` each: create ->
   bind -> wait Bound (Nova's 423 poll) -> unbind -> delete, in one thread
   per served host, bound with Nova's PATCH (host and provider given) and
   then with POST .../schedule (host given, the conductor picks the
   deployable among the host's devices): cycles/s, p50/p99, errors and CPU
   ms per cycle of each process.
"""

from bench import infra
from bench import profile
from bench import scenario_api

MODES = (('nova', False), ('standalone', True))


def run(args):
    results = {'scenario': 'scheduling', 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}, 'rounds': []}
    with infra.deployment(args, host_down_after=300) as dep:
        results['workdir'] = dep.workdir
        prof = profile.Profiler(dep.workdir)
        infra.simagent(dep, 'simagent', hosts=args.hosts,
                       devices_per_host=args.devices_per_host,
                       serve_hosts=args.cycle_threads, heartbeat_interval=20,
                       heartbeat_threads=2)
        scenario_api._wait_for_count(dep, 'devices',
                                     args.hosts * args.devices_per_host)
        targets = scenario_api._bind_targets(
            dep, args.cycle_threads, args.devices_per_host,
            args.cycle_threads)
        scenario_api._make_profiles(dep, 1)
        for number in range(args.rounds):
            results['rounds'].append({
                mode: scenario_api._cycles(
                    dep, args, targets, prof,
                    'round%d-%s' % (number, mode), standalone=standalone)
                for mode, standalone in MODES})
        results['summary'] = {
            mode: sorted(r[mode]['cycles_per_s'] for r in results['rounds'])
            for mode, _ in MODES}
        infra.log('cycles/s by round: %s', results['summary'])
        results['errors'] = {name: infra.count_log_errors(svc)
                             for name, svc in dep.services.items()}
    return results
