"""The ``heartbeats`` scenario: device-utilization updates ingested per
second by one conductor, and the lag until the API shows them.

1. conductor + API on a fresh vhost and database
   ([conductor] heartbeat_flush_interval = ``--flush-interval``);
2. one simulated agent process reports ``--hosts`` inventories of
   ``--devices-per-host`` devices;
3. for each heartbeat interval of ``--intervals``: ``--agent-procs``
   processes send, for ``--duration`` seconds, one heartbeat per host per
   interval through ConductorAPI.heartbeat (on the heartbeat stream, as
   the agent's periodic sends them, or as casts or calls: each of
   ``--modes`` in turn), each
   carrying one reading per
   device (utilization stamped with the time it was sent). Meanwhile the
   bench counts the rows reaching ``device_metrics`` (one per reading
   written; ``MAX(id)`` once a second) and polls
   GET /v2/devices/{uuid}/health of ``--sample-devices`` devices every
   50 ms: lag = when a new reading is first seen - when it was sent.
"""

import os
import threading
import time

from bench import client
from bench import infra
from bench import profile
from bench import simagent
from bench.simagent import percentiles

WARMUP = 5.0        # seconds left out at the start of each run
PROBE_INTERVAL = 0.05
# Mode: streamed beats worth BACKLOG_TTL seconds, sent faster than the
# conductor takes them; once the senders stop, the conductor alone works
# off the backlog, and its rate and CPU then are its capacity.
BACKLOG = 'stream-backlog'
BACKLOG_TTL = 600
# The backlog is done when no row was written for this long.
DRAINED_AFTER = 3.0
MAX_DRAIN_SECONDS = 300


def run(args):
    results = {'scenario': 'heartbeats', 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}, 'runs': []}
    per_host = args.devices_per_host
    with infra.deployment(args, host_down_after=600,
                          flush_interval=args.flush_interval,
                          conductors=args.conductors) as dep:
        results['workdir'] = dep.workdir
        if args.pin_conductors:
            results['pinned'] = dep.pin_conductors()
            infra.log('conductors pinned: %s', results['pinned'])
        prof = profile.Profiler(dep.workdir)
        infra.log('reporting %d devices on %d hosts', args.hosts * per_host,
                  args.hosts)
        inv, inv_file = infra.simagent(
            dep, 'simagent-inventory', hosts=args.hosts,
            devices_per_host=per_host, report_threads=args.report_threads,
            report_only=True, timeout=3600)
        results['inventory'] = infra.simagent_ready_info(inv)
        infra.simagent_result(inv, inv_file)
        infra.log('inventory in: %s', results['inventory'].get('report'))
        samples = _sample_devices(dep, args)
        counts = [int(c) for c in (args.conductor_counts
                                   or str(args.conductors)).split(',')]
        for interval in [float(i) for i in args.intervals.split(',')]:
            for mode in args.modes.split(','):
                for count in counts:
                    _run_conductors(dep, args, count)
                    run_result = _one_run(dep, args, interval, samples,
                                          prof, mode)
                    run_result['conductors'] = count
                    results['runs'].append(run_result)
        results['errors'] = {name: infra.count_log_errors(svc)
                             for name, svc in dep.services.items()}
    return results


def _run_conductors(dep, args, count):
    """The first ``count`` conductors running, the others stopped."""
    for n, name in enumerate(dep.conductor_names):
        svc = dep.services[name]
        if n < count and not svc.running:
            svc.start(infra.START_TIMEOUT)
        elif n >= count and svc.running:
            svc.stop()
    if args.pin_conductors:
        infra.log('conductors pinned: %s', dep.pin_conductors())


def _sample_devices(dep, args):
    """One device on hosts spread over the agent processes."""
    api = client.Client(dep.api_url)
    uuids = []
    for i in range(args.sample_devices):
        host = simagent.host_name(i * args.hosts // args.sample_devices)
        status, body, _ = api.request('GET', '/v2/devices?hostname=%s'
                                      % host)
        if status != 200 or not body['devices']:
            raise infra.BenchError('no device on %s: %s %s' % (host, status,
                                                                body))
        uuids.append(body['devices'][0]['uuid'])
    api.close()
    return uuids


class LagProbe(threading.Thread):
    """Polls the health of a few devices; records how long each new reading
    took from being sent by the agent to being shown by the API."""

    def __init__(self, api_url, uuids):
        super().__init__(daemon=True)
        self.api_url = api_url
        self.uuids = uuids
        self.stop = threading.Event()
        self.lags = []
        self.errors = 0
        self.polls = 0

    def run(self):
        api = client.Client(self.api_url)
        seen = {}
        while not self.stop.is_set():
            for uuid in self.uuids:
                try:
                    status, body, _ = api.request(
                        'GET', '/v2/devices/%s/health?history=0' % uuid)
                except Exception:       # noqa: BLE001 - counted
                    self.errors += 1
                    api.close()
                    continue
                now = time.time()
                self.polls += 1
                if status != 200:
                    self.errors += 1
                    continue
                util = body.get('utilization') or {}
                seq = (util.get('bench_sent_at'), util.get('bench_seq'))
                if seq[0] is None or seen.get(uuid) == seq:
                    continue
                if uuid in seen:        # the first one may be old
                    self.lags.append(now - seq[0])
                seen[uuid] = seq
            self.stop.wait(PROBE_INTERVAL)
        api.close()


def _one_run(dep, args, interval, samples, prof, mode='stream'):
    per_host = args.devices_per_host
    offered = args.hosts * per_host / interval
    infra.log('heartbeats (%ss): %d hosts x %d devices every %.2fs = %.0f '
              'readings/s offered, %d agent processes, %ds', mode,
              args.hosts, per_host, interval, offered, args.agent_procs,
              args.duration)
    if mode in ('stream', BACKLOG):
        # As installed (README): the broker drops what outlived the beats'
        # deadline.
        _broker_policy(dep, BACKLOG_TTL if mode == BACKLOG else interval)
    start_at = time.time() + 10.0
    procs = []
    share = -(-args.hosts // args.agent_procs)
    for p in range(args.agent_procs):
        first = p * share
        count = min(share, args.hosts - first)
        if count <= 0:
            break
        svc, result_file = infra.simagent(
            dep, 'simagent-hb-%s-%d' % (interval, p), first_host=first,
            hosts=count, devices_per_host=per_host, no_report=True,
            heartbeat_interval=interval,
            heartbeat_threads=args.heartbeat_threads,
            heartbeat_start=start_at, duration=args.duration,
            heartbeat_delivery='stream' if mode == BACKLOG else mode,
            heartbeat_ttl=BACKLOG_TTL if mode == BACKLOG else None)
        procs.append((svc, result_file))
    offsets = {name: svc.log_size() for name, svc in dep.services.items()}
    while time.time() < start_at:
        time.sleep(0.05)
    probe = LagProbe(dep.api_url, samples)
    probe.start()
    series = []                 # (time, max id of device_metrics)
    cpu = []
    end_at = start_at + args.duration
    profiling = False
    queued_at_end = None
    while time.time() < end_at + args.flush_interval + 2 or (
            mode == BACKLOG and not _drained(series, end_at)):
        t = time.time()
        series.append((t, dep.scalar('SELECT COALESCE(MAX(id), 0) FROM '
                                     'device_metrics')))
        cpu.append((t, dep.cpu()))
        if mode == BACKLOG and t >= end_at and queued_at_end is None:
            # The senders are done: only the conductor works the backlog.
            probe.stop.set()
            queued_at_end = _queue_depth(dep)
        if (args.profile and not profiling
                and t >= start_at + WARMUP):
            prof.start(dep.services['conductor'].pid,
                       'heartbeats-%s-conductor' % interval,
                       min(15, args.duration - WARMUP - 1))
            profiling = True
        time.sleep(max(0.0, 1.0 - (time.time() - t)))
    probe.stop.set()
    probe.join(10)
    sent = [infra.simagent_result(svc, f) for svc, f in procs]
    hb = {'sent': sum(s['heartbeats']['sent'] for s in sent),
          'readings': sum(s['heartbeats']['readings'] for s in sent),
          'errors': sum(s['heartbeats']['errors'] for s in sent),
          'error_samples': [e for s in sent
                            for e in s['heartbeats']['error_samples']][:5],
          'call_latency_ms': [s['heartbeats']['latency_ms'] for s in sent],
          'agent_cpu_seconds': [s.get('cpu_seconds') for s in sent]}
    # Steady state: from WARMUP after the start to the end of sending.
    window = [(t, n) for t, n in series
              if start_at + WARMUP <= t <= end_at]
    steady = None
    if len(window) >= 2:
        (t0, n0), (t1, n1) = window[0], window[-1]
        steady = round((n1 - n0) / (t1 - t0), 1)
    total_rows = series[-1][1] - _at(series, start_at)
    per_second = [n1 - n0 for (_, n0), (_, n1) in zip(series, series[1:])]
    cpu_window = [(t, c) for t, c in cpu if start_at + WARMUP <= t <= end_at]
    cores = {}
    if len(cpu_window) >= 2:
        (t0, c0), (t1, c1) = cpu_window[0], cpu_window[-1]
        cores = {k: round((c1[k] - c0[k]) / (t1 - t0), 2) for k in c0}
    handled = hb['sent'] / args.duration
    per_unit = {}
    if cores and steady:
        # The conductor's CPU per heartbeat call and per reading written,
        # as if all of it went to one or the other (an upper bound each).
        per_unit = {
            'conductor_cpu_ms_per_heartbeat': round(
                _conductors(cores) * 1000 / max(1e-9, handled), 2),
            'conductor_cpu_us_per_reading': round(
                _conductors(cores) * 1e6 / max(1e-9, steady), 1)}
    result = {
        'mode': mode,
        'interval_s': interval,
        'heartbeats_per_s': round(handled, 1),
        'cost': per_unit,
        'hosts': args.hosts, 'devices_per_host': per_host,
        'agent_procs': len(procs),
        'offered_readings_per_s': round(offered, 1),
        'sent_readings_per_s': round(hb['readings'] / args.duration, 1),
        'heartbeats': hb,
        'ingested_rows_per_s_steady': steady,
        'ingested_rows_total': total_rows,
        'rows_per_second_series': per_second,
        'lag_ms': percentiles(probe.lags),
        'lag_probe': {'polls': probe.polls, 'errors': probe.errors,
                      'devices': len(samples)},
        'cpu_cores': cores,
        'load_average': _loadavg(),
        'log_errors': {name: infra.count_log_errors(svc, offsets[name])
                       for name, svc in dep.services.items()},
    }
    if mode == BACKLOG:
        result['backlog'] = _drain_figures(series, cpu, end_at,
                                           queued_at_end, per_host)
        infra.log('  backlog: %s', result['backlog'])
    if prof.running:
        result['profile'] = prof.stop()
        for name, summary in result['profile'].items():
            profile.print_summary(name, summary)
    infra.log('  offered %.0f/s, sent %.0f/s, ingested %s rows/s steady '
              '(%d rows), lag p50 %s ms p99 %s ms, heartbeat errors %d, '
              'cpu %s', offered, result['sent_readings_per_s'], steady,
              total_rows, result['lag_ms'].get('p50'),
              result['lag_ms'].get('p99'), hb['errors'], cores)
    return result


def _conductors(cores):
    """CPU cores of all conductor processes together."""
    return sum(v for k, v in cores.items() if k.startswith('conductor'))


def _drained(series, end_at):
    t_last, n_last = series[-1] if series else (0, 0)
    if t_last < end_at + DRAINED_AFTER:
        return False
    if t_last > end_at + MAX_DRAIN_SECONDS:
        return True
    still = [n for t, n in series if t >= t_last - DRAINED_AFTER]
    return len(set(still)) == 1


def _broker_policy(dep, ttl):
    import subprocess
    script = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'tools', 'set-heartbeat-stream-policy.sh')
    subprocess.run([script, dep.transport_url.rsplit('/', 1)[1], '200000',
                    str(int(ttl * 1000))], check=True, timeout=60)


def _queue_depth(dep):
    """Beats waiting in the heartbeat stream's queue (rabbitmqctl)."""
    import subprocess
    vhost = dep.transport_url.rsplit('/', 1)[1]
    out = subprocess.run(['rabbitmqctl', '-q', 'list_queues', '-p', vhost,
                          'name', 'messages'], capture_output=True,
                         text=True, timeout=60).stdout
    for line in out.splitlines():
        name, _, count = line.partition('\t')
        if name == 'cyborg_like-heartbeats.info':
            return int(count)
    return None


def _drain_figures(series, cpu, end_at, queued, per_host):
    """Rows written and conductor CPU from the senders' end until the
    last row of the backlog."""
    after = [(t, n) for t, n in series if t >= end_at]
    last = max(n for _, n in after)
    t_done = min(t for t, n in after if n == last)
    (t0, n0) = after[0]
    cpu_at = [(t, c) for t, c in cpu if t0 <= t <= t_done]
    seconds = t_done - t0
    if seconds <= 0 or len(cpu_at) < 2:
        return {'queued_beats_at_end': queued, 'seconds': None}
    cores = {k: round((cpu_at[-1][1][k] - cpu_at[0][1][k]) / seconds, 2)
             for k in cpu_at[0][1]}
    rows = last - n0
    return {
        'queued_beats_at_end': queued,
        'seconds': round(seconds, 1),
        'rows_written': rows,
        'rows_per_s': round(rows / seconds, 1),
        'beats_taken_per_s': round(queued / seconds, 1) if queued else None,
        'readings_taken_per_s': (round(queued * per_host / seconds, 1)
                                 if queued else None),
        'cpu_cores': cores,
        'conductor_cpu_us_per_reading_taken': (
            round(_conductors(cores) * seconds * 1e6 / (queued * per_host),
                  1)
            if queued else None),
    }


def _at(series, when):
    before = [n for t, n in series if t <= when]
    return before[-1] if before else series[0][1]


def _loadavg():
    try:
        with open('/proc/loadavg') as f:
            return f.read().split()[:3]
    except OSError:
        return None


def reported_fleet(dep, args, results, prof):
    """A fleet of ``args.hosts`` x ``args.devices_per_host`` devices
    reported by one simulated agent, then one heartbeat run (hosts up,
    utilization filled); returns the devices the lag probe samples."""
    inv, inv_file = infra.simagent(
        dep, 'simagent-inventory', hosts=args.hosts,
        devices_per_host=args.devices_per_host,
        report_threads=args.report_threads, report_only=True,
        timeout=3600)
    results['inventory'] = infra.simagent_ready_info(inv)
    infra.simagent_result(inv, inv_file)
    samples = _sample_devices(dep, args)
    infra.log('one heartbeat run: hosts up, utilization filled')
    _one_run(dep, args, args.interval, samples, prof)
    return samples

