"""The ``availability`` scenario: the feed orchestrators poll
(docs/availability.md), with a large fleet.

1. conductor, agent-less API on a fresh vhost and database;
2. one simulated agent process reports ``--hosts`` inventories of
   ``--devices-per-host`` devices, then a heartbeat run marks the hosts up;
3. wrk for ``--duration`` s at ``--connections`` on each of: the whole feed
   (default grouping), the whole feed by resource class, a 304 (the ETag
   of the last answer in ``If-None-Match``), and a delta with nothing
   changed (``?since=<cursor>``): req/s, p50/p99, and CPU ms per request
   of each process.
"""

import os

from bench import client
from bench import infra
from bench import profile
from bench import scenario_heartbeats


def run(args):
    results = {'scenario': 'availability', 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}, 'runs': {}}
    with infra.deployment(args, host_down_after=3600,
                          flush_interval=args.flush_interval) as dep:
        results['workdir'] = dep.workdir
        prof = profile.Profiler(dep.workdir)
        scenario_heartbeats.reported_fleet(dep, args, results, prof)
        api = client.Client(dep.api_url)
        status, feed, _took = api.request('GET', '/v2/availability')
        results['feed'] = {'groups': len(feed['groups']),
                           'totals': feed['totals'],
                           'cursor': feed['cursor']}
        etag = _etag(dep.api_url)
        for label, path, script in (
                ('full', '/v2/availability', None),
                ('full, by resource class',
                 '/v2/availability?group_by=resource_class', None),
                ('304', '/v2/availability',
                 _header_script(dep, 'If-None-Match', etag)),
                ('delta, nothing changed',
                 '/v2/availability?since=%d' % feed['cursor'], None)):
            results['runs'][label] = _load(dep, args, path, script)
        results['errors'] = {name: infra.count_log_errors(svc)
                             for name, svc in dep.services.items()}
    return results


def _etag(api_url):
    import urllib.request
    with urllib.request.urlopen(api_url + '/v2/availability',
                                timeout=120) as resp:
        return resp.headers['ETag']


def _header_script(dep, name, value):
    path = os.path.join(dep.workdir, 'if-none-match.lua')
    with open(path, 'w') as f:
        f.write('wrk.headers["%s"] = \'%s\'\n' % (name, value))
    return path


def _load(dep, args, path, script):
    cpu0 = dep.cpu()
    infra.log('wrk GET %s for %ds, %d connections', path, args.duration,
              args.connections)
    result = infra.wrk(dep.api_url + path, args.duration, args.connections,
                       script=script)
    cpu1 = dep.cpu()
    result['cpu_ms_per_request'] = {
        k: round((cpu1[k] - cpu0[k]) * 1000 / max(1, result['requests']), 2)
        for k in cpu0}
    infra.log('  %.1f req/s, p50 %.1f ms, p99 %.1f ms, non-2xx %d, cpu ms/req '
              '%s', result['rps'], result['p50_ms'] or 0,
              result['p99_ms'] or 0, result['non_2xx'],
              result['cpu_ms_per_request'])
    return result
