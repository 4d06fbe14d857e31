"""The ``metrics`` scenario: scraping a conductor's /metrics with a large
fleet (docs/metrics.md), and whether it slows heartbeat ingest.

1. conductor (metrics on a free port, [metrics] fleet_cache_seconds =
   ``--cache-seconds``, 0: a fresh snapshot per scrape, the worst case)
   and API on a fresh vhost and database;
2. one simulated agent process reports ``--hosts`` inventories of
   ``--devices-per-host`` devices;
3. a heartbeat run of ``--duration`` s at ``--interval`` (as the
   ``heartbeats`` scenario) fills every device's utilization;
4. ``--scrapes`` scrapes one after the other: time per scrape, the
   conductor's CPU per scrape, body size and samples;
5. heartbeat runs without and with a scraper (one scrape every
   ``--scrape-interval`` s): readings ingested per second and lag.
"""

import threading
import time
import urllib.request

from bench import infra
from bench import profile
from bench import scenario_heartbeats
from bench.simagent import percentiles
from harness.infra import free_port


def _scrape(url):
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=120) as resp:
        body = resp.read()
    return time.monotonic() - started, body


def run(args):
    results = {'scenario': 'metrics', 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}, 'runs': []}
    port = free_port()
    url = 'http://127.0.0.1:%d/metrics' % port
    with infra.deployment(args, host_down_after=600,
                          flush_interval=args.flush_interval,
                          metrics_port=port,
                          fleet_cache_seconds=args.cache_seconds) as dep:
        results['workdir'] = dep.workdir
        prof = profile.Profiler(dep.workdir)
        samples = scenario_heartbeats.reported_fleet(dep, args, results,
                                                     prof)
        results['scrape'] = _scrapes(dep, url, args.scrapes)
        infra.log('scrape: %s', results['scrape'])
        infra.log('heartbeats without a scraper')
        results['runs'].append(dict(scenario_heartbeats._one_run(
            dep, args, args.interval, samples, prof), scraper=None))
        infra.log('heartbeats with a scrape every %.1fs',
                  args.scrape_interval)
        scraper = Scraper(url, args.scrape_interval)
        scraper.start()
        try:
            run_ = scenario_heartbeats._one_run(dep, args, args.interval,
                                                samples, prof)
        finally:
            scraper.stop.set()
            scraper.join(120)
        results['runs'].append(dict(run_, scraper={
            'scrapes': len(scraper.times), 'errors': scraper.errors,
            'scrape_ms': percentiles(scraper.times)}))
        results['errors'] = {name: infra.count_log_errors(svc)
                             for name, svc in dep.services.items()}
    return results


def _scrapes(dep, url, count):
    _scrape(url)        # the first opens connections
    pid = dep.services['conductor'].pid
    cpu0, times = infra.cpu_seconds(pid), []
    for _ in range(count):
        seconds, body = _scrape(url)
        times.append(seconds)
    cpu = infra.cpu_seconds(pid) - cpu0
    lines = [line for line in body.decode().splitlines()
             if line and not line.startswith('#')]
    return {'scrapes': count, 'scrape_ms': percentiles(times),
            'conductor_cpu_ms_per_scrape': round(cpu * 1000 / count, 1),
            'body_bytes': len(body), 'samples': len(lines),
            'dcgm_gpu_util_samples': sum(
                1 for line in lines
                if line.startswith('DCGM_FI_DEV_GPU_UTIL{'))}


class Scraper(threading.Thread):
    def __init__(self, url, interval):
        super().__init__(daemon=True)
        self.url = url
        self.interval = interval
        self.stop = threading.Event()
        self.times = []
        self.errors = 0

    def run(self):
        while not self.stop.is_set():
            try:
                seconds, _body = _scrape(self.url)
                self.times.append(seconds)
            except Exception:       # noqa: BLE001 - counted
                self.errors += 1
            self.stop.wait(self.interval)
