"""``python -m bench report RESULTS.json [...]``: results as Markdown tables
(what docs/benchmarks.md quotes)."""

import json


def _ms(value):
    return '-' if value is None else '%.0f' % value if value >= 10 \
        else '%.1f' % value


def _cpu(cost, keys=('api', 'conductor', 'rabbitmq', 'database')):
    return ' / '.join('%.1f' % cost.get(k, 0) for k in keys)


def lists_table(title, lists):
    rows = ['#### %s' % title, '',
            '| request | items/page | req/s | p50 ms | p99 ms | errors | '
            'CPU ms/request: API / conductor / RabbitMQ / DB | machine busy '
            '(cores of 2) | new DB connections |',
            '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |']
    for path, r in lists.items():
        rows.append('| GET %s | %s | %.1f | %s | %s | %d | %s | %s | %s |' % (
            path, r.get('items_per_page'), r['rps'], _ms(r['p50_ms']),
            _ms(r['p99_ms']), r['non_2xx'] + r['socket_errors'],
            _cpu(r.get('cpu_ms_per_request', {})),
            r.get('machine_busy_cores'), r.get('new_db_connections', '-')))
    return '\n'.join(rows) + '\n'


def cycles_row(label, c):
    return ('| %s | %.2f | %d | %d | %s | %s | %s | %s |' % (
        label, c['cycles_per_s'], c['cycles'], c['errors'],
        _ms(c['cycle_ms'].get('p50')), _ms(c['cycle_ms'].get('p99')),
        _ms(c['bind_wait_ms'].get('p50')),
        _cpu(c.get('cpu_ms_per_cycle', {}))))


def api_report(r):
    out = ['### `api`: %s' % r.get('command'), '',
           'started %s, %s s; commit %s (%s); load average after: see '
           'JSON' % (r.get('started'), r.get('wall_seconds'),
                     r['machine'].get('commit'),
                     r['machine'].get('product_tree')), '']
    post = r.get('post_arqs')
    if post:
        out += ['POST /v2/accelerator_requests (wrk, %d connections): '
                '%.1f req/s, p50 %s ms, p99 %s ms, %d non-2xx; CPU ms/request '
                'API / conductor / RabbitMQ / DB: %s' % (
                    post['connections'], post['rps'], _ms(post['p50_ms']),
                    _ms(post['p99_ms']), post['non_2xx'],
                    _cpu(post.get('cpu_ms_per_request', {}))), '']
    out.append(lists_table('1,000 devices, built-in server (cheroot, 16 '
                           'threads)', r['lists_small']))
    if r.get('lists_large'):
        out.append(lists_table('10,000 devices, built-in server',
                               r['lists_large']))
    g = r.get('gunicorn')
    if g:
        out.append(lists_table('1,000 devices, gunicorn -w %d -k gthread '
                               '--threads %d' % (g['workers'], g['threads']),
                               g['lists']))
    out += ['#### ARQ create -> bind -> Bound -> unbind -> delete', '',
            '| API | cycles/s | cycles | errors | cycle p50 ms | p99 ms | '
            'bind wait p50 ms | CPU ms/cycle: API / conductor / RabbitMQ / '
            'DB |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
            ]
    if r.get('arq_cycles'):
        out.append(cycles_row('built-in', r['arq_cycles']))
    if g and g.get('arq_cycles'):
        out.append(cycles_row('gunicorn', g['arq_cycles']))
    out += ['', '#### Memory of the API (MB)', '',
            '| API | at start | after the load | peak |',
            '| --- | ---: | ---: | ---: |']
    mem = r['api_memory']
    start = r.get('api_memory_at_start') or {}
    out.append('| built-in, 1,000 devices | %s | %s | %s |' % (
        start.get('total_rss_mb', '-'), mem['total_rss_mb'],
        max(mem['peak_rss_mb'])))
    if r.get('api_memory_large'):
        m = r['api_memory_large']
        out.append('| built-in, after 10,000 devices | | %s | %s |' % (
            m['total_rss_mb'], max(m['peak_rss_mb'])))
    if g:
        gs = g.get('api_memory_at_start') or {}
        out.append('| gunicorn (master + workers) | %s | %s (%s) | %s |' % (
            gs.get('total_rss_mb', '-'), g['api_memory']['total_rss_mb'],
            ' + '.join(str(x) for x in g['api_memory']['rss_mb']),
            ' + '.join(str(x) for x in g['api_memory']['peak_rss_mb'])))
    out += ['', '#### Page walks (limit=100, following `next`) and the '
            'database alone', '',
            '| inventory | list | pages | page p50 ms | page p99 ms | DB '
            'first page ms | DB page near the end ms | plan |',
            '| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |']
    for label, walk, db in (('1,000', r.get('page_walk_small'),
                             r.get('db_page_small')),
                            ('10,000', r.get('page_walk_large'),
                             r.get('db_page_large'))):
        for table in ('devices', 'deployables'):
            if not walk:
                continue
            w = walk[table]
            d = (db or {}).get(table, {})
            out.append('| %s | %s | %d | %s | %s | %s | %s | %s |' % (
                label, table, w['pages'], _ms(w['page_ms'].get('p50')),
                _ms(w['page_ms'].get('p99')), _ms(d.get('first_ms')),
                _ms(d.get('near_end_ms')), d.get('plan', '')))
    out += ['', 'Errors in the service logs: %s' % json.dumps(
        r.get('errors')), '']
    return '\n'.join(out)


def heartbeats_report(r):
    out = ['### `heartbeats`: %s' % r.get('command'), '',
           'started %s; commit %s (%s); inventory report: %s' % (
               r.get('started'), r['machine'].get('commit'),
               r['machine'].get('product_tree'),
               (r.get('inventory') or {}).get('report')), '',
           '| interval s | offered readings/s | sent/s | heartbeats/s | '
           'ingested rows/s (steady) | lag p50 ms | lag p99 ms | heartbeat '
           'call p50 ms | conductor cores | conductor CPU ms/heartbeat | '
           'errors |',
           '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | '
           '---: | ---: |']
    for run in r['runs']:
        hb = run['heartbeats']
        call = [c.get('p50') for c in hb['call_latency_ms'] if c]
        out.append('| %s | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | '
                   '%d |' % (
                       run['interval_s'], run['offered_readings_per_s'],
                       run['sent_readings_per_s'],
                       run.get('heartbeats_per_s', '-'),
                       run['ingested_rows_per_s_steady'],
                       _ms(run['lag_ms'].get('p50')),
                       _ms(run['lag_ms'].get('p99')),
                       _ms(max(call)) if call else '-',
                       run['cpu_cores'].get('conductor'),
                       (run.get('cost') or {}).get(
                           'conductor_cpu_ms_per_heartbeat', '-'),
                       hb['errors']))
    return '\n'.join(out) + '\n'


def main(paths):
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        if r.get('scenario') == 'api':
            print(api_report(r))
        elif r.get('scenario') == 'heartbeats':
            print(heartbeats_report(r))
        elif r.get('scenario') == 'compare':
            from bench import report_compare
            print(report_compare.report(r))
