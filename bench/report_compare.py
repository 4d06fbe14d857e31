"""Markdown of a ``compare`` run: one table per case, a row per scenario,
both sides' figures and the ratios ours/Cyborg."""

from bench import scenario_compare as sc

LABELS = {sc.CYBORG: 'Cyborg 17', sc.OURS: 'ours (built-in)',
          sc.OURS_GUNICORN: 'ours (gunicorn)'}
# Processes in the CPU column, in this order (the ones a side has).
PROCS = ('api', 'conductor', 'agent', 'rabbitmq', 'database')


def _num(value, digits=1):
    if value is None:
        return '-'
    if abs(value) >= 100:
        return '{:,.0f}'.format(value)
    return '%.*f' % (digits, value)


def _ratio(value):
    return '-' if value is None else '%.2f' % value


def _cpu(cpu):
    parts = ['%s %s' % (p, _num(cpu[p])) for p in PROCS if p in cpu]
    return '%s (%s)' % (_num(cpu.get('total')), ', '.join(parts))


def case_table(case):
    summary = case['summary']
    sides = [s for s in (sc.CYBORG, sc.OURS, sc.OURS_GUNICORN)
             if any(s in row for row in summary.values())]
    ours = [s for s in sides if s != sc.CYBORG]
    head = ['scenario']
    for s in sides:
        head += ['%s req/s' % LABELS[s], 'p50 / p99 ms', 'errors']
    head += ['req/s ours/Cyborg', 'CPU ms/request, all processes (per '
             'process)', 'CPU ours/Cyborg']
    rows = ['| ' + ' | '.join(head) + ' |',
            '| --- |' + ' ---: | --- | ---: |' * len(sides)
            + ' ---: | --- | ---: |']
    for name, row in summary.items():
        cells = [name + (' (cycles/s)' if name == 'ARQ cycle' else '')]
        for s in sides:
            r = row.get(s)
            if not r:
                cells += ['-', '-', '-']
                continue
            rps = _num(r['rps'])
            if r.get('items') is not None and name.startswith('GET') \
                    and not name.endswith('}'):
                rps += ' (%d items)' % r['items']
            cells += [rps, '%s / %s' % (_num(r['p50_ms'], 0),
                                        _num(r['p99_ms'], 0)),
                      str(r['errors'])]
        ratios = row.get('ratio', {})
        cells.append(' / '.join(_ratio(ratios.get(s, {}).get('rps'))
                                for s in ours))
        cells.append('<br>'.join('%s: %s' % (LABELS[s], _cpu(row[s]['cpu_ms']))
                                 for s in sides if s in row))
        cells.append(' / '.join(_ratio(ratios.get(s, {}).get('cpu_ms_total'))
                                for s in ours))
        rows.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(rows) + '\n'


def report(r):
    out = ['### `compare`: %s' % r.get('command'), '',
           'started %s, %s s; commit %s (%s); Cyborg %s; rounds %s; '
           'medians over the rounds (CPU ms per request or per cycle).' % (
               r.get('started'), r.get('wall_seconds'),
               r.get('machine', {}).get('commit'),
               r.get('machine', {}).get('product_tree'),
               r.get('cyborg_versions', {}).get('openstack-cyborg'),
               r.get('params', {}).get('rounds')), '']
    for case in r['cases']:
        if case.get('error'):
            out += ['#### %s: failed' % case['case'], '', case['error'], '']
            continue
        counts = case.get('counts', {})
        out += ['#### %s: %s' % (case['case'], ', '.join(
            '%s %s' % (k, v) for k, v in case['expected_counts'].items())),
            '',
            'loaded: Cyborg %s; ours %s' % (counts.get(sc.CYBORG),
                                            counts.get(sc.OURS)), '',
            case_table(case)]
        mem = case.get('api_memory_after') or {}
        if mem:
            out.append('API RSS after the run: Cyborg %s MB (uWSGI master + '
                       'workers %s), ours %s MB (built-in API).' % (
                           mem[sc.CYBORG]['total_rss_mb'],
                           ' + '.join(str(x) for x in
                                      mem[sc.CYBORG]['rss_mb']),
                           mem[sc.OURS]['total_rss_mb']))
            out.append('')
        out.append('Errors in the service logs: %s' % case.get('log_errors'))
        out.append('')
    if r.get('others_running_at_start') or r.get('others_running_at_end'):
        out += ['Also running on the machine: at the start %d, at the end %d '
                'test processes (see JSON).' % (
                    len(r.get('others_running_at_start') or []),
                    len(r.get('others_running_at_end') or [])), '']
    return '\n'.join(out)
