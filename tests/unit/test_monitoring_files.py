"""The Grafana dashboard and the alert rules shipped in etc/ are
well-formed (tests/integration/test_prometheus.py runs them in a real
Prometheus)."""

import json
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, 'etc', 'grafana', 'cyborg-like-fleet.json')
ALERTS = os.path.join(ROOT, 'etc', 'prometheus', 'cyborg-like-alerts.yml')
DATASOURCE = {'type': 'prometheus', 'uid': '${datasource}'}


def _dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def test_dashboard_structure():
    dashboard = _dashboard()
    # Grafana 10/11's schema; it migrates older dashboards, not newer.
    assert isinstance(dashboard['schemaVersion'], int)
    assert 36 <= dashboard['schemaVersion'] <= 41
    assert dashboard['uid'] and dashboard['title']
    variables = dashboard['templating']['list']
    assert {'name': 'datasource', 'type': 'datasource',
            'query': 'prometheus'}.items() <= variables[0].items()
    panels = dashboard['panels']
    ids = [panel['id'] for panel in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        grid = panel['gridPos']
        assert set(grid) == {'h', 'w', 'x', 'y'}
        assert grid['x'] + grid['w'] <= 24 and grid['h'] > 0
        if panel['type'] == 'row':
            continue
        assert panel['datasource'] == DATASOURCE, panel['title']
        assert panel['targets'], panel['title']
        refs = [target['refId'] for target in panel['targets']]
        assert len(refs) == len(set(refs))
        for target in panel['targets']:
            assert target['expr'].strip()
            assert target['datasource'] == DATASOURCE


def test_panels_do_not_overlap():
    cells = {}
    for panel in _dashboard()['panels']:
        grid = panel['gridPos']
        for x in range(grid['x'], grid['x'] + grid['w']):
            for y in range(grid['y'], grid['y'] + grid['h']):
                assert (x, y) not in cells, (panel['title'], cells[(x, y)])
                cells[(x, y)] = panel['title']


def test_alert_rules_cover_what_operators_act_on():
    with open(ALERTS) as f:
        document = yaml.safe_load(f)
    rules = {rule['alert']: rule for group in document['groups']
             for rule in group['rules']}
    assert {'CyborgLikeHostDown', 'CyborgLikeDeviceUnhealthy',
            'CyborgLikeDeviceDrained', 'CyborgLikeOperationFailed',
            'CyborgLikeDrainCircuitOpen'} <= set(rules)
    assert rules['CyborgLikeDrainCircuitOpen']['expr'] == \
        'cyborg_like_health_drain_breaker_open == 1'
    for rule in rules.values():
        assert rule['labels']['severity'] in ('warning', 'critical')
        assert rule['annotations']['summary']
