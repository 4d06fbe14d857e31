"""``compare``: cyborg_like and OpenStack Cyborg 17 side by side, one run.

For each case (``--cases``: ``small`` = host 0's 16-handle FPGA only;
``large-N`` = that plus N GPUs on N/8 hosts, ``--large-profiles``
profiles, ``--large-arqs`` unbound ARQs), both sides are started on the
same RabbitMQ and MariaDB servers, each with its own vhost and database:

- Cyborg 17 (bench.cyborg17): conductor + API under uWSGI with
  ``--cyborg-workers`` processes; fixtures written into its schema;
- ours (bench.infra.Deployment): conductor + API (built-in server, and
  gunicorn ``-w --gunicorn-workers`` when not 0, same conductor) + our
  agent (bench.compare_agent) reporting the same inventory; profiles and
  ARQs through our API.

Then ``--rounds`` interleaved rounds (``plan``: each round runs every
scenario on every side in turn, A, B, A, B ...). Scenarios: wrk
(``-t2 -c --connections -d --duration``) on the four lists (ours with
``limit=100``; Cyborg's lists have no paging and return every item) and a
show of each; wrk ``POST /v2/accelerator_requests`` (the ARQs it made are
deleted afterwards, untimed, so every round sees the same tables); ARQ
create -> bind -> Nova-style poll -> unbind -> delete in
``--cycle-threads`` threads (bench.client.arq_cycles) on the FPGA.
Around each, the CPU time of every process of the side measured
(``/proc/<pid>/stat``; RabbitMQ and MariaDB are shared, so theirs is
whatever happened meanwhile) gives CPU ms per request per process.
``summarise`` reduces the rounds to one row per scenario and side
(medians) with the ratios ours/Cyborg; ``python -m bench report`` renders
it.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench import client
from bench import compare_fixtures as fx
from bench import cyborg17
from bench import infra
from harness.process import Service

CYBORG = 'cyborg17'
OURS = 'ours'
OURS_GUNICORN = 'ours-gunicorn'

LISTS = ('devices', 'deployables', 'device_profiles', 'accelerator_requests')
BODY_KEY = {'accelerator_requests': 'arqs'}


def scenarios():
    """Names of the scenarios, in the order each round runs them."""
    names = ['GET /v2/%s' % r for r in LISTS]
    names += ['GET /v2/%s/{uuid}' % r for r in LISTS]
    names += ['POST /v2/accelerator_requests', 'ARQ cycle']
    return names


def plan(sides, names, rounds):
    """[(round, side, scenario)]: every round runs each side's block of
    scenarios in turn (A, B, A, B, ...), so slow drift of the machine's load
    hits both sides alike."""
    return [(r, side, name) for r in range(rounds) for side in sides
            for name in names]


def parse_cases(text):
    """'small,large-1000' -> [('small', 0), ('large-1000', 1000)]."""
    out = []
    for item in text.split(','):
        item = item.strip()
        if item == 'small':
            out.append((item, 0))
        elif item.startswith('large-'):
            out.append((item, int(item.split('-', 1)[1])))
        elif item:
            raise ValueError('unknown case %r (small, large-N)' % item)
    return out


def case_fixture(devices, args):
    if not devices:
        return fx.spec(0, profiles=1, arqs=args.small_arqs)
    return fx.spec(devices, profiles=args.large_profiles,
                   arqs=args.large_arqs)


# --- the two sides ----------------------------------------------------------

class Side:
    """What a scenario needs from a side: URL, headers, CPU, paths."""

    name = None
    headers = {}

    def cpu(self):
        raise NotImplementedError

    def list_path(self, resource):
        raise NotImplementedError


class CyborgSide(Side):
    name = CYBORG
    headers = cyborg17.HEADERS

    def __init__(self, dep):
        self.dep = dep
        self.api_url = dep.api_url

    def cpu(self):
        return self.dep.cpu()

    def list_path(self, resource):
        return '/v2/%s' % resource

    def delete_arqs_since(self, max_id):
        """ARQs made by the POST scenario (never bound): straight from the
        database."""
        with self.dep.engine.begin() as conn:
            import sqlalchemy as sa
            conn.execute(sa.text('DELETE FROM extended_accelerator_requests '
                                 'WHERE id > :m'), {'m': max_id})

    def max_arq_id(self):
        return self.dep.scalar('SELECT COALESCE(MAX(id), 0) FROM '
                               'extended_accelerator_requests')


class OurSide(Side):
    def __init__(self, dep, agent, name=OURS):
        self.dep = dep
        self.agent = agent
        self.name = name

    @property
    def api_url(self):
        return self.dep.api_url

    def cpu(self):
        used = self.dep.cpu()
        used['agent'] = round(sum(infra.cpu_seconds(p) or 0
                                  for p in self.agent.pids()), 2)
        return used

    def list_path(self, resource):
        return '/v2/%s?limit=100' % resource

    def max_arq_id(self):
        return self.dep.scalar('SELECT COALESCE(MAX(id), 0) FROM '
                               'extended_accelerator_requests')

    def delete_arqs_since(self, max_id):
        """Through our API (our conductor keeps quota usage)."""
        import sqlalchemy as sa
        with self.dep.engine.connect() as conn:
            uuids = [r[0] for r in conn.execute(sa.text(
                'SELECT uuid FROM extended_accelerator_requests WHERE id > '
                ':m'), {'m': max_id})]
        api = client.Client(self.api_url)
        try:
            for i in range(0, len(uuids), 50):
                status, body, _ = api.request(
                    'DELETE', '/v2/accelerator_requests?arqs=%s'
                    % ','.join(uuids[i:i + 50]))
                if status != 204:
                    raise infra.BenchError('DELETE arqs: %s %s'
                                           % (status, body))
        finally:
            api.close()


# --- measuring --------------------------------------------------------------

def _lua(workdir, name, headers, method=None, body=None):
    path = os.path.join(workdir, '%s.lua' % name)
    lines = []
    if method:
        lines.append('wrk.method = "%s"' % method)
    if body is not None:
        lines.append("wrk.body = '%s'" % json.dumps(body))
        lines.append('wrk.headers["Content-Type"] = "application/json"')
    for k, v in headers.items():
        lines.append('wrk.headers["%s"] = "%s"' % (k, v))
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


def cpu_delta(before, after, count):
    """CPU ms per unit (request or cycle) of each process, and in all."""
    per = {k: round((after[k] - before[k]) * 1000 / max(1, count), 2)
           for k in before}
    per['total'] = round(sum(per.values()), 2)
    return per


def _wrk(side, workdir, path, args, method=None, body=None):
    script = None
    if side.headers or method:
        script = _lua(workdir, 'wrk-%s-%s' % (side.name, method or 'GET'),
                      side.headers, method, body)
    before = side.cpu()
    result = infra.wrk(side.api_url + path, args.duration, args.connections,
                       script=script)
    after = side.cpu()
    result['errors'] = result['non_2xx'] + result['socket_errors']
    result['cpu_ms_per_request'] = cpu_delta(before, after,
                                             result['requests'])
    return result


def run_scenario(side, name, ctx, args):
    """One scenario on one side; a result dict with rps, p50_ms, p99_ms,
    errors, requests and cpu_ms_per_request."""
    workdir = ctx['workdir']
    if name == 'ARQ cycle':
        before = side.cpu()
        res = client.arq_cycles(
            side.api_url, fx.CYCLE_PROFILE,
            [ctx['target']] * args.cycle_threads, args.cycle_seconds,
            args.max_cycles, headers=side.headers)
        after = side.cpu()
        return {'rps': res['cycles_per_s'], 'unit': 'cycles/s',
                'requests': res['cycles'], 'errors': res['errors'],
                'error_samples': res['error_samples'],
                'p50_ms': res['cycle_ms'].get('p50'),
                'p99_ms': res['cycle_ms'].get('p99'),
                'polls_per_cycle': res['polls_per_cycle'],
                'statuses': res['statuses'],
                'cpu_ms_per_request': cpu_delta(before, after, res['cycles']),
                'load_average_after': infra.loadavg()}
    if name == 'POST /v2/accelerator_requests':
        max_id = side.max_arq_id()
        res = _wrk(side, workdir, '/v2/accelerator_requests', args,
                   method='POST',
                   body={'device_profile_name': fx.CYCLE_PROFILE})
        made = side.max_arq_id() - max_id
        side.delete_arqs_since(max_id)
        res['arqs_made'] = made
        return res
    resource = name.split('/')[2]
    if name.endswith('{uuid}'):
        path = '/v2/%s/%s' % (resource, ctx['show'][side.name][resource])
    else:
        path = side.list_path(resource)
    res = _wrk(side, workdir, path, args)
    res['path'] = path
    if name.endswith('{uuid}'):
        res['items'] = 1
        return res
    # Items on the page: one more GET (not measured); Cyborg's unpaged
    # lists of large tables can take longer than any client waits.
    try:
        status, body = _get(side, path, timeout=args.item_count_timeout)
        key = BODY_KEY.get(resource, resource)
        res['items'] = len(body.get(key, [])) if isinstance(body, dict) \
            else None
    except OSError as exc:
        res['items'] = None
        res['items_error'] = '%s: %s' % (type(exc).__name__, exc)
    return res


def _get(side, path, timeout=60):
    api = client.Client(side.api_url, timeout=timeout, headers=side.headers)
    try:
        status, body, _ = api.request('GET', path)
        return status, body
    finally:
        api.close()


def show_uuids(side):
    """A uuid of each resource, from the side's first list page."""
    out = {}
    for resource in LISTS:
        status, body = _get(side, '/v2/%s' % resource
                            + ('?limit=1' if side.name != CYBORG else ''))
        items = body.get(BODY_KEY.get(resource, resource)) or []
        if status != 200 or not items:
            raise infra.BenchError('%s: nothing in GET /v2/%s: %s %s' % (
                side.name, resource, status, str(body)[:300]))
        out[resource] = items[0]['uuid']
    return out


# --- loading ----------------------------------------------------------------

def load_ours(dep, fixture, workdir):
    inventory = fx.our_inventory(fixture)
    path = os.path.join(workdir, 'our-inventory.json')
    with open(path, 'w') as f:
        json.dump(inventory, f)
    argv = [sys.executable, '-m', 'bench.compare_agent', '--config-file',
            dep.config_file, '--inventory', path, '--serve-hosts', '1']
    agent = Service('compare-agent', argv,
                    os.path.join(dep.workdir, 'compare-agent.log'),
                    'SIMAGENT READY')
    dep.services_extra.append(agent)
    began = time.monotonic()
    agent.start(timeout=1800)
    want = fx.counts(fixture)
    infra.wait_for(lambda: dep.scalar('SELECT COUNT(*) FROM devices')
                   >= want['devices'], 600, 'devices not all in')
    inventory_s = time.monotonic() - began
    api = client.Client(dep.api_url)
    began = time.monotonic()
    try:
        for p in fixture['profiles']:
            status, body, _ = api.request('POST', '/v2/device_profiles', p)
            if status != 201:
                raise infra.BenchError('POST device_profiles: %s %s'
                                       % (status, body))
    finally:
        api.close()
    profiles_s = time.monotonic() - began
    began = time.monotonic()
    _post_arqs(dep.api_url, fixture['arqs'])
    arqs_s = time.monotonic() - began
    return agent, {'inventory_s': round(inventory_s, 1),
                   'profiles_s': round(profiles_s, 1),
                   'arqs_s': round(arqs_s, 1)}


def _post_arqs(api_url, count, threads=8):
    import threading
    left = [count]
    lock = threading.Lock()
    errors = []

    def worker():
        api = client.Client(api_url)
        while True:
            with lock:
                if left[0] <= 0 or errors:
                    break
                left[0] -= 1
            status, body, _ = api.request(
                'POST', '/v2/accelerator_requests',
                {'device_profile_name': fx.CYCLE_PROFILE})
            if status != 201:
                errors.append('%s %s' % (status, str(body)[:200]))
        api.close()
    ths = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errors:
        raise infra.BenchError('POST accelerator_requests: %s' % errors[0])


def table_counts(engine):
    import sqlalchemy as sa
    out = {}
    with engine.connect() as conn:
        for t in ('devices', 'deployables', 'attach_handles', 'attributes',
                  'device_profiles', 'extended_accelerator_requests'):
            out[t] = conn.execute(sa.text('SELECT COUNT(*) FROM %s'
                                          % t)).scalar()
        out['hosts'] = conn.execute(sa.text(
            'SELECT COUNT(DISTINCT hostname) FROM devices')).scalar()
    return out


def others_running():
    """What else runs on the machine (other sessions' tests)."""
    try:
        out = subprocess.run(['pgrep', '-af', 'pytest|ansible|schemathesis'],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    own = str(os.getpid())
    return [line[:160] for line in out.stdout.splitlines()
            if line and not line.startswith(own + ' ') and 'pgrep' not in line]


# --- the run ----------------------------------------------------------------

def run(args):
    workdir = args.workdir or tempfile.mkdtemp(prefix='cyborg_like_compare_')
    os.makedirs(workdir, exist_ok=True)
    infra.log('work directory (logs, config): %s', workdir)
    cyborg17.ensure_venv()
    results = {'scenario': 'compare', 'workdir': workdir,
               'params': {k: v for k, v in vars(args).items()
                          if k != 'func'},
               'cyborg_versions': cyborg17.venv_versions(),
               'others_running_at_start': others_running(),
               'cases': []}
    for case, devices in parse_cases(args.cases):
        try:
            results['cases'].append(run_case(case, devices, args, workdir))
        except Exception as exc:     # noqa: BLE001 - the other cases go on
            infra.log('case %s failed: %s', case, exc)
            results['cases'].append({'case': case, 'error': '%s: %s' % (
                type(exc).__name__, str(exc)[:2000])})
        # What is done so far, should a later case not end.
        with open(os.path.join(workdir, 'partial-results.json'), 'w') as f:
            json.dump(results, f, indent=1, default=str)
    results['others_running_at_end'] = others_running()
    return results


def run_case(case, devices, args, workdir):
    fixture = case_fixture(devices, args)
    cwork = os.path.join(workdir, case)
    os.makedirs(cwork, exist_ok=True)
    out = {'case': case, 'expected_counts': fx.counts(fixture)}
    infra.log('case %s: %s', case, out['expected_counts'])
    nova = cyborg17.NovaStub()
    with infra.rabbitmq_vhost() as cy_url, \
            infra.fresh_database('mariadb') as cy_db, \
            infra.deployment(argparse_ns(args, cwork), host_down_after=36000,
                             gunicorn_workers=0) as dep:
        cy = cyborg17.CyborgDeployment(cwork, cy_url, cy_db, nova.url,
                                       api_workers=args.cyborg_workers)
        try:
            # -- Cyborg: schema, fixtures, services
            cy.dbsync()
            began = time.monotonic()
            cy.load(fx.cyborg_rows(fixture, cyborg17.PROJECT_ID))
            out['cyborg_load_s'] = round(time.monotonic() - began, 1)
            cy.start()
            out['cyborg_api_memory_at_start'] = cy.api_rss_at_start
            # -- ours: the agent reports the inventory; profiles, ARQs by API
            agent, out['our_load_s'] = load_ours(dep, fixture, cwork)
            out['our_api_memory_at_start'] = dep.api_rss_at_start
            out['counts'] = {CYBORG: table_counts(cy.engine),
                             OURS: table_counts(dep.engine)}
            infra.log('loaded: %s', out['counts'])
            cyborg = CyborgSide(cy)
            ours = OurSide(dep, agent)
            sides = [cyborg, ours]
            if args.gunicorn_workers:
                sides.append(OurSide(dep, agent, OURS_GUNICORN))
            ctx = {'workdir': cwork, 'target': fx.cycle_target(fixture),
                   'show': {CYBORG: show_uuids(cyborg),
                            OURS: show_uuids(ours)}}
            ctx['show'][OURS_GUNICORN] = ctx['show'][OURS]
            names = scenarios()
            if args.scenarios:
                wanted = set(s.strip() for s in args.scenarios.split(','))
                names = [n for n in names if n in wanted or
                         n.split(' ', 1)[-1] in wanted]
            runs = []
            by_name = {s.name: s for s in sides}
            mode = OURS
            for rnd, side_name, name in plan([s.name for s in sides], names,
                                             args.rounds):
                side = by_name[side_name]
                if side_name in (OURS, OURS_GUNICORN) and side_name != mode:
                    infra.log('our API as %s', side_name)
                    dep.gunicorn_threads = args.gunicorn_threads
                    dep.switch_api(args.gunicorn_workers
                                   if side_name == OURS_GUNICORN else 0)
                    mode = side_name
                infra.log('[%s] round %d, %s: %s', case, rnd + 1, side_name,
                          name)
                try:
                    res = run_scenario(side, name, ctx, args)
                except (OSError, infra.BenchError) as exc:
                    # Counted, and the run goes on (e.g. a request that
                    # outlived the client's timeout).
                    res = {'rps': 0.0, 'requests': 0, 'errors': 1,
                           'error_samples': ['%s: %s' % (
                               type(exc).__name__, str(exc)[:300])],
                           'cpu_ms_per_request': {'total': None}}
                res.update({'round': rnd + 1, 'side': side_name,
                            'scenario': name})
                infra.log('  %.1f %s, p50 %s ms, p99 %s ms, errors %d, CPU '
                          'ms/req %s', res['rps'],
                          res.get('unit', 'req/s'), res.get('p50_ms'),
                          res.get('p99_ms'), res['errors'],
                          res['cpu_ms_per_request'])
                runs.append(res)
            if mode != OURS:
                dep.switch_api(0)
            out['runs'] = runs
            out['api_memory_after'] = {CYBORG: cy.api_memory(),
                                       OURS: dep.api_memory()}
            out['nova_events'] = nova.events
            out['log_errors'] = {
                CYBORG: {n: infra.count_log_errors(s)
                         for n, s in cy.services.items()},
                OURS: {n: infra.count_log_errors(s)
                       for n, s in dep.services.items()}}
            out['summary'] = summarise(runs)
        except BaseException:
            cy.print_logs()
            raise
        finally:
            cy.close()
            nova.close()
    return out


def argparse_ns(args, workdir):
    import argparse
    return argparse.Namespace(workdir=os.path.join(workdir, 'ours'),
                              backend='mariadb', db_option=args.db_option,
                              api_env=args.api_env)


# --- the table --------------------------------------------------------------

def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def ratio(ours, theirs):
    """ours / Cyborg, or None when either is missing or Cyborg's is 0."""
    if ours is None or not theirs:
        return None
    return round(ours / theirs, 2)


def summarise(runs):
    """{scenario: {side: medians over rounds, 'ratio': {...}}}."""
    out = {}
    for name in dict.fromkeys(r['scenario'] for r in runs):
        row = {}
        for side in dict.fromkeys(r['side'] for r in runs):
            mine = [r for r in runs if r['scenario'] == name
                    and r['side'] == side]
            if not mine:
                continue
            procs = sorted({k for r in mine for k in r['cpu_ms_per_request']})
            row[side] = {
                'rounds': len(mine),
                'rps': _median([r['rps'] for r in mine]),
                'rps_rounds': [r['rps'] for r in mine],
                'p50_ms': _median([r.get('p50_ms') for r in mine]),
                'p99_ms': _median([r.get('p99_ms') for r in mine]),
                'errors': sum(r['errors'] for r in mine),
                'requests': sum(r['requests'] for r in mine),
                'items': mine[0].get('items'),
                'unit': mine[0].get('unit', 'req/s'),
                'cpu_ms': {p: _median([r['cpu_ms_per_request'].get(p)
                                       for r in mine]) for p in procs},
            }
        theirs = row.get(CYBORG)
        if theirs:
            row['ratio'] = {}
            for side in (OURS, OURS_GUNICORN):
                if side in row:
                    row['ratio'][side] = {
                        'rps': ratio(row[side]['rps'], theirs['rps']),
                        'cpu_ms_total': ratio(row[side]['cpu_ms']['total'],
                                              theirs['cpu_ms']['total']),
                        'p50_ms': ratio(row[side]['p50_ms'],
                                        theirs['p50_ms'])}
        out[name] = row
    return out


def add_arguments(parser):
    parser.add_argument('--workdir',
                        help='where logs, config and results go (default: '
                             'a new temporary directory)')
    parser.add_argument('--output', help='write the results as JSON here too')
    parser.add_argument('--cases', default='small',
                        help='comma separated: small, large-N (N GPUs more)')
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--scenarios',
                        help='comma separated subset of the scenario names '
                             '(default: all)')
    parser.add_argument('--duration', type=int, default=6,
                        help='seconds of each wrk run')
    parser.add_argument('--connections', type=int, default=8)
    parser.add_argument('--cycle-seconds', type=int, default=15)
    parser.add_argument('--cycle-threads', type=int, default=8)
    parser.add_argument('--max-cycles', type=int, default=20000)
    parser.add_argument('--item-count-timeout', type=float, default=120,
                        help='seconds the (unmeasured) GET counting a '
                             'page\'s items may take')
    parser.add_argument('--cyborg-workers', type=int, default=2,
                        help='uWSGI processes of Cyborg\'s API')
    parser.add_argument('--gunicorn-workers', type=int, default=2,
                        help='our API also as gunicorn -w N (0: built-in '
                             'only)')
    parser.add_argument('--gunicorn-threads', type=int, default=8)
    parser.add_argument('--small-arqs', type=int, default=10,
                        help='unbound ARQs in the small case')
    parser.add_argument('--large-profiles', type=int, default=500)
    parser.add_argument('--large-arqs', type=int, default=10000)
    parser.add_argument('--db-option', action='append', metavar='KEY=VALUE',
                        help='a line for our conductor\'s [database] section')
    parser.add_argument('--api-env', action='append', metavar='KEY=VALUE',
                        help='environment of our API process')
    parser.set_defaults(module='scenario_compare')
