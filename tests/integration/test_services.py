"""API, conductor and agent as separate processes over RabbitMQ, on MariaDB
and on PostgreSQL: discovery reaches the API, heartbeats are recorded, and
the API degrades to 503 (not a hang) when no conductor is there.

The tests of one backend share one set of processes (the ``deployment``
fixture); each test sets the inventory it needs first.
"""

import copy
import json
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from .infra import BASE_INVENTORY
from .infra import CONDUCTOR_TIMEOUT
from .infra import STOP_TIMEOUT
from .infra import utcnow
from .infra import wait_for

pytestmark = pytest.mark.integration


def _models(devices):
    return sorted(d['model'] for d in devices)


def _expected_models(document):
    return sorted(d['model'] for d in document['devices'])


def _set_inventory(dep, document):
    """Give the fake driver ``document``; wait until the API shows it."""
    dep.write_inventory(document)
    wanted = _expected_models(document)
    return dep.wait_for_devices(
        lambda devices: _models(devices) == wanted,
        'The API never showed the devices %s of the inventory file' % wanted)


def _assert_cyborg_error(resp, status):
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers['Content-Type'].startswith('application/json')
    fault = json.loads(resp.json()['error_message'])
    assert fault['faultstring'], fault
    return fault['faultstring']


def _deployables_by_name(dep):
    return {d['name']: d for d in dep.list_ok('deployables')}


def test_discovered_inventory_is_served(deployment):
    dep = deployment
    devices = _set_inventory(dep, BASE_INVENTORY)

    by_model = {d['model']: d for d in devices}
    for entry in BASE_INVENTORY['devices']:
        device = by_model[entry['model']]
        assert device['type'] == entry['type']
        assert device['vendor'] == entry['vendor']
        assert device['hostname'] == dep.host
        assert device['status'] == 'enabled'
        assert json.loads(device['std_board_info']) == entry['std_board_info']
        assert json.loads(device['vendor_board_info']) == entry.get(
            'vendor_board_info', {})
        assert uuid.UUID(device['uuid'])
        assert device['created_at']
        assert device['links'] == [{
            'href': '%s/v2/devices/%s' % (dep.api_url, device['uuid']),
            'rel': 'self'}]
        shown = dep.get('/v2/devices/%s' % device['uuid'])
        assert shown.status_code == 200, shown.text
        assert shown.json() == device

    # Filters are applied by the conductor's query on the real database.
    resp = dep.get('/v2/devices', params={'hostname': dep.host})
    assert _models(resp.json()['devices']) == _expected_models(
        BASE_INVENTORY)
    resp = dep.get('/v2/devices', params={'hostname': 'no-such-host'})
    assert resp.json()['devices'] == []
    resp = dep.get('/v2/devices', params={'type': 'GPU'})
    assert _models(resp.json()['devices']) == ['Tesla T4']

    deployables = _deployables_by_name(dep)
    expected = {d['name']: d for entry in BASE_INVENTORY['devices']
                for d in entry['deployables']}
    assert sorted(deployables) == sorted(expected)
    for name, entry in expected.items():
        deployable = deployables[name]
        assert deployable['num_accelerators'] == len(entry['pci_functions'])
        assert deployable['driver_name'] == 'fake'
        assert deployable['bitstream_id'] == entry.get('bitstream_id')
        assert deployable['parent_id'] is None
        attributes = json.loads(deployable['attributes_list'])
        assert {k: v for a in attributes for k, v in a.items()} == \
            entry['attributes']
        shown = dep.get('/v2/deployables/%s' % deployable['uuid'])
        assert shown.status_code == 200, shown.text
        assert shown.json() == deployable
    # Both regions belong to the FPGA, the GPU's deployable to the GPU.
    assert deployables['region0']['device_id'] == \
        deployables['region1']['device_id']
    assert deployables['gpu0']['device_id'] != \
        deployables['region0']['device_id']

    # Errors raised in the conductor cross RabbitMQ and keep their meaning.
    missing = str(uuid.uuid4())
    assert missing in _assert_cyborg_error(
        dep.get('/v2/devices/%s' % missing), 404)
    _assert_cyborg_error(dep.get('/v2/deployables/%s' % missing), 404)
    _assert_cyborg_error(dep.get('/v2/devices',
                                 params={'marker': missing}), 400)


def test_inventory_changes_reach_the_api(deployment):
    dep = deployment
    before = {d['model']: d for d in _set_inventory(dep, BASE_INVENTORY)}
    deployables_before = _deployables_by_name(dep)

    # Remove the GPU, add a NIC with one VF; the FPGA stays as it is.
    changed = copy.deepcopy(BASE_INVENTORY)
    changed['devices'] = [d for d in changed['devices']
                          if d['type'] != 'GPU']
    changed['devices'].append({
        'type': 'NIC', 'vendor': '0x15b3', 'model': 'ConnectX-6 Dx',
        'pci_address': '0000:3b:00.0',
        'std_board_info': {'device_id': '0x101d'},
        'deployables': [{'name': 'vf0', 'attributes': {'rc': 'CUSTOM_NIC'},
                         'pci_functions': ['0000:3b:00.2']}]})
    after = {d['model']: d for d in _set_inventory(dep, changed)}

    fpga = 'PAC Arria 10 GX'
    assert after[fpga]['uuid'] == before[fpga]['uuid']
    assert after[fpga]['created_at'] == before[fpga]['created_at']
    assert after['ConnectX-6 Dx']['hostname'] == dep.host
    assert after['ConnectX-6 Dx']['type'] == 'NIC'
    removed = before['Tesla T4']['uuid']
    _assert_cyborg_error(dep.get('/v2/devices/%s' % removed), 404)

    deployables_after = _deployables_by_name(dep)
    assert sorted(deployables_after) == ['region0', 'region1', 'vf0']
    for name in ('region0', 'region1'):
        assert deployables_after[name]['uuid'] == \
            deployables_before[name]['uuid']
    _assert_cyborg_error(dep.get(
        '/v2/deployables/%s' % deployables_before['gpu0']['uuid']), 404)

    # And back: the GPU is a new device now; the FPGA is still the same.
    restored = {d['model']: d for d in _set_inventory(dep, BASE_INVENTORY)}
    assert restored[fpga]['uuid'] == before[fpga]['uuid']
    assert restored['Tesla T4']['uuid'] != removed


def _list_hosts_over_rpc(dep):
    """The conductor's list_hosts, called as a client process would."""
    script = textwrap.dedent("""
        import json, sys
        from cyborg_like.cmd import common
        from cyborg_like.common import context
        from cyborg_like.conductor import rpcapi
        common.prepare(sys.argv[1:])
        api = rpcapi.ConductorAPI(timeout=10)
        print(json.dumps(api.list_hosts(context.get_admin_context())))
    """)
    proc = subprocess.run(
        [sys.executable, '-c', script, '--config-file', dep.config_file],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_heartbeat_is_recorded(deployment):
    dep = deployment
    _set_inventory(dep, BASE_INVENTORY)

    first = wait_for(
        lambda: (lambda row: row if row and row['last_heartbeat'] else None)(
            dep.host_row()),
        message='No heartbeat of %s in the hosts table' % dep.host)
    assert first['agent_version'] == '1.2'
    assert len(first['inventory_hash']) == 64
    # Naive UTC on both sides; the bound only catches a wrong time zone.
    assert abs((utcnow() - first['last_heartbeat']).total_seconds()) < 120

    # It keeps coming (MariaDB's DATETIME holds whole seconds).
    later = wait_for(
        lambda: (lambda row: row if row['last_heartbeat'] >
                 first['last_heartbeat'] else None)(dep.host_row()),
        timeout=15,
        message='The heartbeat of %s was not renewed' % dep.host)
    assert later['inventory_hash'] == first['inventory_hash']

    hosts = {h['hostname']: h for h in _list_hosts_over_rpc(dep)}
    assert list(hosts) == [dep.host]
    assert hosts[dep.host]['state'] == 'up'
    assert hosts[dep.host]['agent_version'] == '1.2'
    assert hosts[dep.host]['inventory_hash'] == first['inventory_hash']


def test_api_answers_503_without_conductor_and_recovers(deployment):
    dep = deployment
    devices = _set_inventory(dep, BASE_INVENTORY)

    assert dep.stop('conductor') == {'conductor': 0}, \
        'The conductor did not exit cleanly on SIGTERM'

    stopped = time.monotonic()
    # The API's read model answers (with its ETag) until its copy went
    # unconfirmed for twice [api] read_model_check_interval (2 s by
    # default): the design value; the test fails past three times it.
    copy_design = 2 * 2.0
    for path in ('/v2/devices', '/v2/deployables',
                 '/v2/devices/%s' % devices[0]['uuid']):
        while True:
            started = time.monotonic()
            # The client's own timeout only turns a hang into a clear
            # failure.
            resp = dep.get(path, timeout=CONDUCTOR_TIMEOUT + 30)
            elapsed = time.monotonic() - started
            assert elapsed < CONDUCTOR_TIMEOUT + 5, \
                'GET %s took %.1fs without a conductor' % (path, elapsed)
            if resp.status_code != 200:
                break
            # From the copy, then the conductor is needed.
            assert resp.headers.get('ETag'), resp.headers
            assert time.monotonic() - stopped < 3 * copy_design, \
                'GET %s still answered from the copy' % path
            time.sleep(0.2)
        print('\nGET %s answered 503 %.2fs after the conductor stopped '
              '(the copy unconfirmed: design %.0fs)'
              % (path, time.monotonic() - stopped, copy_design))
        message = _assert_cyborg_error(resp, 503)
        assert 'conductor' in message.lower(), message

    # What needs no conductor still works.
    assert dep.get('/').status_code == 200

    dep.start('conductor')
    wait_for(lambda: dep.get('/v2/devices').status_code == 200,
             message='The API did not recover after the conductor restarted')
    assert sorted(d['uuid'] for d in dep.list_ok('devices')) == \
        sorted(d['uuid'] for d in devices)
    # The agent's heartbeats reach the new conductor too.
    restarted = utcnow().replace(microsecond=0)
    wait_for(lambda: dep.host_row()['last_heartbeat'] > restarted,
             timeout=20,
             message='No heartbeat recorded after the conductor restarted')


def test_services_stop_cleanly_on_sigterm(deployment):
    # Last in the module: the processes are stopped here anyway.
    started = time.monotonic()
    codes = deployment.stop('api', 'agent', 'conductor')
    assert codes == {'api': 0, 'agent': 0, 'conductor': 0}, \
        'exit codes after SIGTERM (None: needed SIGKILL): %s' % codes
    assert time.monotonic() - started < 3 * STOP_TIMEOUT
    for name in ('conductor', 'agent', 'api'):
        assert 'Stopped' in deployment.services[name].read_log(), name

