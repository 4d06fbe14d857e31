"""``python -m bench compare`` without services: fixtures for both schemas,
the interleaving, the summary's ratios and the Markdown table."""

import json

import pytest

from bench import compare_fixtures as fx
from bench import report_compare
from bench import scenario_compare as sc


@pytest.mark.parametrize('devices,profiles,arqs', [(0, 1, 10),
                                                   (1000, 500, 10000),
                                                   (13, 3, 0)])
def test_both_schemas_hold_the_same_fixture(devices, profiles, arqs):
    fixture = fx.spec(devices, profiles=profiles, arqs=arqs)
    want = fx.counts(fixture)
    assert want['devices'] == devices + 1
    assert want['attach_handles'] == devices + fx.FPGA_HANDLES
    assert want['device_profiles'] == profiles
    assert want['extended_accelerator_requests'] == arqs
    rows = fx.cyborg_rows(fixture, 'p' * 32)
    assert fx.cyborg_counts(rows) == want
    inventory = fx.our_inventory(fixture)
    assert fx.our_counts(inventory, len(fixture['profiles']),
                         fixture['arqs']) == want


def test_small_case_is_one_host_with_a_16_handle_fpga():
    fixture = fx.spec(0, profiles=1, arqs=0)
    (host, devices), = fx.our_inventory(fixture).items()
    (fpga,) = devices
    (dep,) = fpga['deployables']
    assert fpga['type'] == 'FPGA'
    assert dep['num_accelerators'] == 16
    assert len(dep['attach_handles']) == 16
    assert len({json.dumps(h['attach_info'], sort_keys=True)
                for h in dep['attach_handles']}) == 16
    rows = fx.cyborg_rows(fixture, 'p' * 32)
    assert [d['hostname'] for d in rows['devices']] == [host]
    assert {h['deployable_id'] for h in rows['attach_handles']} == {1}


def test_same_rp_uuid_on_both_sides_and_consistent_keys():
    fixture = fx.spec(20, profiles=4, arqs=5)
    rows = fx.cyborg_rows(fixture, 'p' * 32)
    host, rp = fx.cycle_target(fixture)
    assert rows['deployables'][0]['rp_uuid'] == rp
    assert rows['devices'][0]['hostname'] == host
    # Foreign keys point at rows that exist; uuids are unique.
    dev_ids = {r['id'] for r in rows['devices']}
    dep_ids = {r['id'] for r in rows['deployables']}
    cp_ids = {r['id'] for r in rows['controlpath_ids']}
    assert {r['device_id'] for r in rows['deployables']} <= dev_ids
    assert {r['deployable_id'] for r in rows['attach_handles']} <= dep_ids
    assert {r['cpid_id'] for r in rows['attach_handles']} <= cp_ids
    assert {r['deployable_id'] for r in rows['attributes']} <= dep_ids
    assert {r['device_profile_id']
            for r in rows['extended_accelerator_requests']} == {1}
    for table, items in rows.items():
        assert len({r['uuid'] for r in items}) == len(items), table
    assert json.loads(rows['device_profiles'][0]['profile_json']) == {
        'groups': fixture['profiles'][0]['groups']}
    # Same devices per host as ours.
    inv = fx.our_inventory(fixture)
    per_host = {}
    for r in rows['devices']:
        per_host[r['hostname']] = per_host.get(r['hostname'], 0) + 1
    assert per_host == {h: len(d) for h, d in inv.items()}
    assert max(per_host.values()) <= max(fx.GPUS_PER_HOST, 1)


def test_plan_interleaves_sides_round_by_round():
    order = sc.plan(['A', 'B'], ['x', 'y'], 2)
    assert order == [(0, 'A', 'x'), (0, 'A', 'y'), (0, 'B', 'x'),
                     (0, 'B', 'y'), (1, 'A', 'x'), (1, 'A', 'y'),
                     (1, 'B', 'x'), (1, 'B', 'y')]
    sides = [s for _, s, name in order if name == 'x']
    assert sides == ['A', 'B', 'A', 'B']
    assert len(sc.plan(['A', 'B', 'C'], sc.scenarios(), 3)) == \
        3 * 3 * len(sc.scenarios())


def test_scenarios_and_cases():
    names = sc.scenarios()
    assert names[:4] == ['GET /v2/devices', 'GET /v2/deployables',
                         'GET /v2/device_profiles',
                         'GET /v2/accelerator_requests']
    assert 'GET /v2/accelerator_requests/{uuid}' in names
    assert names[-2:] == ['POST /v2/accelerator_requests', 'ARQ cycle']
    assert sc.parse_cases('small,large-1000') == [('small', 0),
                                                  ('large-1000', 1000)]
    with pytest.raises(ValueError):
        sc.parse_cases('huge')


def test_cpu_delta_per_process_and_total():
    before = {'api': 1.0, 'conductor': 2.0, 'database': 0.5}
    after = {'api': 1.5, 'conductor': 2.25, 'database': 0.5}
    assert sc.cpu_delta(before, after, 100) == {
        'api': 5.0, 'conductor': 2.5, 'database': 0.0, 'total': 7.5}
    assert sc.cpu_delta(before, before, 0)['total'] == 0


def _run(side, scenario, rnd, rps, cpu, errors=0, p50=10.0):
    return {'side': side, 'scenario': scenario, 'round': rnd, 'rps': rps,
            'p50_ms': p50, 'p99_ms': p50 * 3, 'errors': errors,
            'requests': int(rps * 10), 'items': 1,
            'cpu_ms_per_request': {'api': cpu / 2, 'conductor': cpu / 2,
                                   'total': cpu}}


def test_summary_takes_medians_and_ratios_ours_over_cyborg():
    runs = [_run(sc.CYBORG, 'GET /v2/devices', 1, 300, 4.0),
            _run(sc.OURS, 'GET /v2/devices', 1, 150, 8.0, errors=1),
            _run(sc.CYBORG, 'GET /v2/devices', 2, 200, 6.0),
            _run(sc.OURS, 'GET /v2/devices', 2, 250, 6.0, p50=20.0)]
    summary = sc.summarise(runs)
    row = summary['GET /v2/devices']
    assert row[sc.CYBORG]['rps'] == 250
    assert row[sc.OURS]['rps'] == 200
    assert row[sc.OURS]['errors'] == 1
    assert row[sc.OURS]['rps_rounds'] == [150, 250]
    assert row[sc.CYBORG]['cpu_ms']['total'] == 5.0
    assert row[sc.OURS]['cpu_ms']['total'] == 7.0
    assert row['ratio'][sc.OURS] == {'rps': 0.8, 'cpu_ms_total': 1.4,
                                     'p50_ms': 1.5}
    assert sc.ratio(None, 3) is None and sc.ratio(3, 0) is None


def test_report_renders_one_row_per_scenario_with_ratios():
    runs = [_run(sc.CYBORG, 'GET /v2/devices', 1, 300, 4.0),
            _run(sc.OURS, 'GET /v2/devices', 1, 600, 2.0),
            _run(sc.OURS_GUNICORN, 'GET /v2/devices', 1, 450, 3.0),
            _run(sc.CYBORG, 'ARQ cycle', 1, 5.0, 130.0),
            _run(sc.OURS, 'ARQ cycle', 1, 10.0, 100.0)]
    case = {'case': 'small', 'expected_counts': {'devices': 1},
            'counts': {}, 'summary': sc.summarise(runs)}
    text = report_compare.report({'command': 'x', 'params': {'rounds': 1},
                                  'cases': [case]})
    lines = [line for line in text.splitlines() if line.startswith('| GET')
             or line.startswith('| ARQ')]
    assert len(lines) == 2
    devices, cycle = lines
    assert '| 2.00 / 1.50 |' in devices         # req/s ours/Cyborg
    assert '| 0.50 / 0.75 |' in devices         # CPU ours/Cyborg
    assert 'Cyborg 17: 4.0 (api 2.0, conductor 2.0)' in devices
    assert '| 2.00 / - |' in cycle and '| 0.77 / - |' in cycle
    assert '(cycles/s)' in cycle
