"""The ``api`` scenario: list throughput and latency, ARQ cycles, API RSS,
per-page latency at two inventory sizes, and the gunicorn form.

1. conductor + API (built-in cheroot server) on a fresh vhost and database;
2. simulated agents report ``--small`` devices (8 per host) and keep their
   hosts up with heartbeats; the first ``--serve-hosts`` hosts answer the
   agent RPC API so ARQs can be bound to them;
3. device profiles, then POST /v2/accelerator_requests under wrk (which
   also fills the ARQ list);
4. wrk GET of devices, deployables, device_profiles, accelerator_requests,
   with the default page size and with limit=100;
5. ARQ create -> bind -> wait Bound -> unbind -> delete cycles;
6. page walks (limit=100) of devices and deployables;
7. the same API as gunicorn ``-w N -k gthread`` (lists, cycles, RSS);
8. more agents bring the inventory to ``--large`` devices; lists and page
   walks again.
"""

import os
import time

from bench import client
from bench import infra
from bench import profile
from bench.simagent import percentiles

PROFILE_NAME = 'bench-gpu'
LISTS = ('devices', 'deployables', 'device_profiles',
         'accelerator_requests')


def run(args):
    results = {'scenario': 'api', 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}}
    per_host = args.devices_per_host
    small_hosts = max(1, args.small // per_host)
    large_hosts = max(small_hosts, args.large // per_host)
    with infra.deployment(args, host_down_after=300) as dep:
        results['workdir'] = dep.workdir
        results['api_memory_at_start'] = dep.api_rss_at_start
        prof = profile.Profiler(dep.workdir)
        # -- inventory, small
        infra.log('reporting %d devices on %d hosts', small_hosts * per_host,
                  small_hosts)
        agents, _ = infra.simagent(
            dep, 'simagent-small', hosts=small_hosts,
            devices_per_host=per_host, serve_hosts=args.serve_hosts,
            heartbeat_interval=20, heartbeat_threads=2)
        results['inventory_small'] = infra.simagent_ready_info(agents)
        _wait_for_count(dep, 'devices', small_hosts * per_host)
        targets = _bind_targets(dep, args.serve_hosts, per_host,
                                args.cycle_threads)
        _make_profiles(dep, args.profiles)
        # -- POST ARQs (fills the ARQ list)
        results['post_arqs'] = _post_arqs(dep, args)
        results['counts_small'] = _counts(dep)
        # -- lists
        lists = tuple(args.lists.split(',')) if args.lists else LISTS
        results['lists_small'] = _lists(dep, args, lists, prof,
                                        'small-builtin')
        # -- ARQ cycles
        if args.cycle_seconds:
            results['arq_cycles'] = _cycles(dep, args, targets, prof,
                                            'cycles-builtin')
        results['api_memory'] = dep.api_memory()
        results['page_walk_small'] = _walks(dep)
        results['db_page_small'] = _db_pages(dep)
        results['errors_small'] = {
            name: infra.count_log_errors(svc)
            for name, svc in dep.services.items()}
        # -- gunicorn
        if args.gunicorn_workers:
            infra.log('switching the API to gunicorn -w %d -k gthread '
                      '--threads %d', args.gunicorn_workers,
                      args.gunicorn_threads)
            dep.gunicorn_threads = args.gunicorn_threads
            dep.switch_api(args.gunicorn_workers)
            gunicorn_start = dep.api_rss_at_start
            results['gunicorn'] = {
                'workers': args.gunicorn_workers,
                'threads': args.gunicorn_threads,
                'lists': _lists(dep, args, ('devices',), prof,
                                'small-gunicorn'),
                'arq_cycles': _cycles(dep, args, targets, prof,
                                      'cycles-gunicorn')
                if args.cycle_seconds else None,
                'api_memory': dep.api_memory(),
                'api_memory_at_start': gunicorn_start,
            }
            dep.switch_api(0)
        # -- inventory, large
        if large_hosts > small_hosts:
            infra.log('reporting %d more devices on %d more hosts',
                      (large_hosts - small_hosts) * per_host,
                      large_hosts - small_hosts)
            more, _ = infra.simagent(
                dep, 'simagent-large', first_host=small_hosts,
                hosts=large_hosts - small_hosts, devices_per_host=per_host,
                heartbeat_interval=20, heartbeat_threads=2,
                report_threads=args.report_threads, timeout=1800)
            results['inventory_large'] = infra.simagent_ready_info(more)
            _wait_for_count(dep, 'devices', large_hosts * per_host)
            results['counts_large'] = _counts(dep)
            results['lists_large'] = _lists(
                dep, args, ('devices', 'deployables'), prof, 'large-builtin')
            results['page_walk_large'] = _walks(dep)
            results['db_page_large'] = _db_pages(dep)
            results['api_memory_large'] = dep.api_memory()
        results['cpu_seconds'] = dep.cpu()
        results['errors'] = {name: infra.count_log_errors(svc)
                             for name, svc in dep.services.items()}
    return results


def _wait_for_count(dep, table, want):
    infra.wait_for(lambda: dep.scalar('SELECT COUNT(*) FROM %s' % table)
                   >= want, 600, '%s never reached %d' % (table, want), 1.0)


def _counts(dep):
    return {table: dep.scalar('SELECT COUNT(*) FROM %s' % table)
            for table in ('hosts', 'devices', 'deployables', 'attach_handles',
                          'attributes', 'device_profiles',
                          'extended_accelerator_requests')}


def _bind_targets(dep, serve_hosts, per_host, wanted):
    """(hostname, rp_uuid) of distinct deployables on the hosts whose agent
    RPC is served, each checked through GET /v2/deployables?rp_uuid=."""
    from bench import simagent
    from cyborg_like.common import inventory as wire
    api = client.Client(dep.api_url)
    targets = []
    for i in range(wanted):
        host = simagent.host_name(i % serve_hosts)
        cp = simagent.cpid(i // serve_hosts % per_host)
        rp = wire.deployable_rp_uuid(host, cp, 'gpu0')
        status, body, _ = api.request('GET', '/v2/deployables?rp_uuid=%s'
                                      % rp)
        if status != 200 or len(body['deployables']) != 1:
            raise infra.BenchError('deployable %s of %s not listed: %s %s'
                                   % (rp, host, status, body))
        targets.append((host, body['deployables'][0]['rp_uuid']))
    api.close()
    return targets


def _make_profiles(dep, count):
    api = client.Client(dep.api_url)
    groups = [{'resources:PGPU': '1', 'trait:CUSTOM_GPU_BENCH': 'required'}]
    status, body, _ = api.request('POST', '/v2/device_profiles', {
        'name': PROFILE_NAME, 'groups': groups})
    if status != 201:
        raise infra.BenchError('POST device_profiles: %s %s' % (status, body))
    for i in range(count - 1):
        status, body, _ = api.request('POST', '/v2/device_profiles', {
            'name': 'bench-filler-%04d' % i, 'groups': groups,
            'description': 'filler for list benchmarks'})
        if status != 201:
            raise infra.BenchError('POST device_profiles: %s %s'
                                   % (status, body))
    api.close()


def _post_arqs(dep, args):
    script = os.path.join(dep.workdir, 'post-arq.lua')
    with open(script, 'w') as f:
        f.write('wrk.method = "POST"\n'
                'wrk.body = \'{"device_profile_name": "%s"}\'\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                % PROFILE_NAME)
    infra.log('wrk POST /v2/accelerator_requests for %ds', args.post_seconds)
    cpu0 = dep.cpu()
    result = infra.wrk(dep.api_url + '/v2/accelerator_requests',
                       args.post_seconds, args.connections, script=script)
    cpu1 = dep.cpu()
    result['cpu_ms_per_request'] = {
        k: round((cpu1[k] - cpu0[k]) * 1000 / max(1, result['requests']), 2)
        for k in cpu0}
    # 201 is the only success; wrk counts anything outside 2xx/3xx.
    infra.log('  %.1f req/s, p50 %.1f ms, p99 %.1f ms, non-2xx %d, cpu '
              'ms/req %s', result['rps'], result['p50_ms'] or 0,
              result['p99_ms'] or 0, result['non_2xx'],
              result['cpu_ms_per_request'])
    return result


def _lists(dep, args, resources, prof, label):
    out = {}
    for resource in resources:
        for query in ('', '?limit=100'):
            path = '/v2/%s%s' % (resource, query)
            if args.profile and resource == 'devices':
                for name in ('api', 'conductor'):
                    pid = dep.services[name].pid
                    prof.start(pid, '%s-%s-%s' % (label, name,
                                                  query.strip('?') or
                                                  'default'),
                               args.duration)
            cpu0 = dep.cpu()
            conns0 = _db_connections(dep)
            infra.log('wrk GET %s for %ds, %d connections', path,
                      args.duration, args.connections)
            result = infra.wrk(dep.api_url + path, args.duration,
                               args.connections)
            cpu1 = dep.cpu()
            if conns0 is not None:
                # Connections the database accepted meanwhile (from anyone
                # on this machine): the conductor's pool churn.
                result['new_db_connections'] = _db_connections(dep) - conns0
            result['cpu_cores'] = {
                k: round((cpu1[k] - cpu0[k]) / args.duration, 2)
                for k in cpu0}
            result['cpu_ms_per_request'] = {
                k: round((cpu1[k] - cpu0[k]) * 1000 / max(1, result[
                    'requests']), 2) for k in cpu0}
            # How many items one page held.
            status, body, took = client.Client(dep.api_url).request(
                'GET', path)
            result['items_per_page'] = len(body[resource.replace(
                'accelerator_requests', 'arqs')])
            out[path] = result
            if prof.running:
                result['profile'] = prof.stop()
                for name, summary in result['profile'].items():
                    profile.print_summary(name, summary)
            infra.log('  %.1f req/s, p50 %.1f ms, p99 %.1f ms, non-2xx %d, '
                      'socket errors %d, %d items/page, cpu ms/req %s, '
                      'machine busy %s cores, load %s, new DB connections '
                      '%s', result['rps'],
                      result['p50_ms'] or 0, result['p99_ms'] or 0,
                      result['non_2xx'], result['socket_errors'],
                      result['items_per_page'], result['cpu_ms_per_request'],
                      result['machine_busy_cores'],
                      result['load_average_after'],
                      result.get('new_db_connections'))
    return out


def _db_connections(dep):
    if dep.backend != 'mariadb':
        return None
    return int(dep.scalar(
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
        "WHERE VARIABLE_NAME = 'CONNECTIONS'"))


def _cycles(dep, args, targets, prof, label, standalone=False):
    infra.log('ARQ cycles%s: %d threads for %ds (at most %d cycles)',
              ' (standalone)' if standalone else '', len(targets),
              args.cycle_seconds, args.max_cycles)
    if args.profile:
        for name in ('api', 'conductor'):
            prof.start(dep.services[name].pid, '%s-%s' % (label, name),
                       args.cycle_seconds)
    offsets = {name: svc.log_size() for name, svc in dep.services.items()}
    cpu0 = dep.cpu()
    result = client.arq_cycles(dep.api_url, PROFILE_NAME, targets,
                               args.cycle_seconds, args.max_cycles,
                               standalone=standalone)
    cpu1 = dep.cpu()
    result['cpu_cores'] = {k: round((cpu1[k] - cpu0[k]) / result['seconds'],
                                    2) for k in cpu0}
    result['cpu_ms_per_cycle'] = {
        k: round((cpu1[k] - cpu0[k]) * 1000 / max(1, result['cycles']), 1)
        for k in cpu0}
    result['load_average_after'] = infra.loadavg()
    result['log_errors'] = {name: infra.count_log_errors(svc, offsets[name])
                            for name, svc in dep.services.items()}
    if prof.running:
        result['profile'] = prof.stop()
        for name, summary in result['profile'].items():
            profile.print_summary(name, summary)
    infra.log('  %.2f cycles/s, %d cycles, %d errors, cycle p50 %s ms, '
              'bind wait p50 %s ms, cpu %s', result['cycles_per_s'],
              result['cycles'], result['errors'],
              result['cycle_ms'].get('p50'),
              result['bind_wait_ms'].get('p50'), result['cpu_cores'])
    return result


def _db_pages(dep, repeat=20):
    """What the database alone spends on one page of 100, as the conductor
    asks for it (ORDER BY created_at, id; first page and one near the end,
    after a marker), and its plan."""
    import sqlalchemy as sa
    out = {}
    with dep.engine.connect() as conn:
        for table in ('devices', 'deployables'):
            total = conn.execute(sa.text(
                'SELECT COUNT(*) FROM %s' % table)).scalar()
            marker = conn.execute(sa.text(
                'SELECT created_at, id FROM %s ORDER BY created_at, id '
                'LIMIT 1 OFFSET :n' % table), {'n': max(0, total - 150)}
            ).first()
            queries = {
                'first': ('SELECT * FROM %s ORDER BY created_at, id '
                          'LIMIT 100' % table, {}),
                'near_end': ('SELECT * FROM %s WHERE created_at > :c OR '
                             '(created_at = :c AND id > :i) ORDER BY '
                             'created_at, id LIMIT 100' % table,
                             {'c': marker[0], 'i': marker[1]}),
            }
            out[table] = {'rows': total}
            for name, (sql, params) in queries.items():
                times = []
                for _ in range(repeat):
                    began = time.monotonic()
                    conn.execute(sa.text(sql), params).all()
                    times.append(time.monotonic() - began)
                out[table][name + '_ms'] = percentiles(times)['p50']
            if dep.backend == 'mariadb':
                plan = conn.execute(sa.text(
                    'EXPLAIN ' + queries['first'][0])).mappings().first()
                out[table]['plan'] = '%s rows=%s %s' % (
                    plan['type'], plan['rows'], plan['Extra'])
    infra.log('  database alone, page of 100: %s', out)
    return out


def _walks(dep):
    out = {}
    for resource in ('devices', 'deployables'):
        began = time.monotonic()
        latencies, items = client.walk_pages(dep.api_url, resource, 100)
        out[resource] = {
            'pages': len(latencies), 'items': items,
            'seconds': round(time.monotonic() - began, 2),
            'page_ms': percentiles(latencies),
            'first_page_ms': round(latencies[0] * 1000, 2),
            'last_page_ms': round(latencies[-1] * 1000, 2),
        }
        infra.log('  walk %s: %d pages, page p50 %s ms, p99 %s ms', resource,
                  len(latencies), out[resource]['page_ms'].get('p50'),
                  out[resource]['page_ms'].get('p99'))
    return out
