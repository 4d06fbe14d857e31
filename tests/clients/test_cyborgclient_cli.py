"""python-cyborgclient as users run it: ``openstack accelerator ...``.

The plugin is pointed at the service with no Keystone at all:
``--os-auth-type none --os-endpoint http://127.0.0.1:PORT``; it discovers
the v2 API from GET / and sends its default microversion (2.3) unless
``--os-accelerator-api-version`` says otherwise.

``openstack`` runs in this process (clirun.in_process: openstackclient's
shell, with its own stdin, stdout, stderr and no ``OS_*`` variables),
which spares a Python start-up and openstackclient's imports a command.
Two tests run the console script in a subprocess, for what only a real
process shows: the plugin that a fresh ``openstack`` loads, with its help
(test_the_plugin_is_cyborgclient), and a failure's exit code and stderr
(test_device_show_of_an_unknown_uuid_fails_readably).
"""

import importlib.metadata
import json
import uuid

import pytest
import requests

from tests.clients import clirun
from tests.clients.clirun import OPENSTACK
from tests.clients.service import HANDLES
from tests.clients.service import wait_for


class CommandFailed(Exception):
    def __init__(self, argv, result):
        self.returncode = result.returncode
        self.stdout = result.stdout
        self.stderr = result.stderr
        super().__init__('%s exited with %s:\n%s%s' % (
            ' '.join(argv), result.returncode, result.stdout, result.stderr))


@pytest.fixture(scope='module')
def osc(cyborg):
    """Run ``openstack [global options] accelerator ARGS``.

    Returns the parsed ``-f json`` output when ``fmt`` is set, else stdout;
    raises CommandFailed on a non-zero exit. It runs in this process, or
    as the console script in a subprocess when ``subprocess`` is set.
    """
    def run(*args, fmt=True, api_version=None, subprocess=False):
        argv = [OPENSTACK, '--os-auth-type', 'none',
                '--os-endpoint', cyborg.url]
        if api_version:
            argv += ['--os-accelerator-api-version', api_version]
        argv += ['accelerator'] + list(args)
        if fmt:
            argv += ['-f', 'json']
        if subprocess:
            result = clirun.subprocess_run(argv)
        else:
            result = clirun.in_process(argv)
        if result.returncode != 0:
            raise CommandFailed(argv, result)
        return json.loads(result.stdout) if fmt else result.stdout

    return run


def _name(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


def test_the_plugin_is_cyborgclient(osc):
    # OSC >= 10 ships its own "accelerator" commands, which would shadow
    # python-cyborgclient's: only the plugin may provide them here.
    providers = {ep.value.split('.')[0] for ep in
                 importlib.metadata.entry_points(
                     group='openstack.accelerator.v2')}
    assert providers == {'cyborgclient'}
    # A subprocess: the commands a fresh ``openstack`` finds.
    help_text = osc('arq', 'bind', '--help', fmt=False, subprocess=True)
    assert '<device_rp_uuid>' in help_text


def test_device_list_and_show(osc, cyborg):
    devices = osc('device', 'list')
    assert sorted((d['type'], d['vendor']) for d in devices) == [
        ('FPGA', '0x8086'), ('GPU', '0x10de')]
    assert {d['hostname'] for d in devices} == {cyborg.host}
    fpga = next(d for d in devices if d['type'] == 'FPGA')

    shown = osc('device', 'show', fpga['uuid'])
    assert shown['uuid'] == fpga['uuid']
    assert shown['model'] == 'PAC N3000'
    assert shown['hostname'] == cyborg.host
    # The plugin asks for microversion 2.3, which adds the status.
    assert shown['status'] == 'enabled'
    assert json.loads(shown['std_board_info']) == {
        'device_id': '0x0b30', 'class': '0x120000'}


def test_device_show_of_an_unknown_uuid_fails_readably(osc):
    missing = str(uuid.uuid4())
    with pytest.raises(CommandFailed) as failed:
        # A subprocess: the console script's exit code and stderr.
        osc('device', 'show', missing, subprocess=True)
    assert failed.value.returncode == 1
    assert 'device not found: %s' % missing in failed.value.stderr


def test_deployable_list_and_show(osc, cyborg):
    deployables = osc('deployable', 'list')
    assert sorted(d['name'] for d in deployables) == [
        'gpu0', 'region0', 'region1']
    by_name = {d['name']: d for d in deployables}
    # Both regions belong to the FPGA, the GPU is another device.
    assert by_name['region0']['device_id'] == by_name['region1']['device_id']
    assert by_name['gpu0']['device_id'] != by_name['region0']['device_id']

    long_list = osc('deployable', 'list', '--long')
    assert {d['name']: d['num_accelerators'] for d in long_list} == {
        'gpu0': 1, 'region0': 1, 'region1': 1}

    shown = osc('deployable', 'show', by_name['region1']['uuid'])
    assert shown['uuid'] == by_name['region1']['uuid']
    assert shown['name'] == 'region1'


def test_device_profile_create_list_show_delete(osc):
    name = _name('cli-fpga')
    groups = [{'resources:FPGA': '1',
               'trait:CUSTOM_FPGA_INTEL_N3000': 'required',
               'accel:bitstream_id': 'bs-gzip-1'}]
    created = osc('device', 'profile', 'create', name, json.dumps(groups),
                  '--description', 'gzip offload')
    assert created['name'] == name
    assert created['groups'] == groups
    assert created['description'] == 'gzip offload'
    uuid.UUID(created['uuid'])
    assert created['created_at']

    listed = {p['name']: p for p in osc('device', 'profile', 'list')}
    assert listed[name]['uuid'] == created['uuid']
    assert listed[name]['groups'] == groups

    assert osc('device', 'profile', 'show', created['uuid']) == created
    # By name needs 2.2; the plugin's default (2.3) has it ...
    assert osc('device', 'profile', 'show', name)['uuid'] == created['uuid']
    # ... and at 2.0 it is refused with Cyborg's message.
    with pytest.raises(CommandFailed) as refused:
        osc('device', 'profile', 'show', name, api_version='2.0')
    assert 'minimal required API version should be 2.2' in (
        refused.value.stderr)
    assert '406' in refused.value.stderr

    out = osc('device', 'profile', 'delete', created['uuid'], fmt=False)
    assert out.strip() == 'Deleted device_profile %s' % created['uuid']
    assert name not in {p['name'] for p in osc('device', 'profile', 'list')}
    with pytest.raises(CommandFailed) as gone:
        osc('device', 'profile', 'show', created['uuid'])
    assert 'device_profile %s not found' % created['uuid'] in (
        gone.value.stderr)


def test_device_profile_delete_by_name(osc):
    name = _name('cli-gpu')
    osc('device', 'profile', 'create', name, '[{"resources:PGPU": "1"}]')
    out = osc('device', 'profile', 'delete', name, fmt=False)
    assert out.strip() == 'Deleted device_profile %s' % name
    assert name not in {p['name'] for p in osc('device', 'profile', 'list')}


def _show_until(osc, arq_uuid, states):
    def shown_in_states():
        arq = osc('arq', 'show', arq_uuid)
        return arq if arq['state'] in states else None

    return wait_for(shown_in_states, timeout=60, interval=0.5,
                    what='ARQ %s in %s' % (arq_uuid, states))


def test_arq_create_bind_unbind_delete(osc, cyborg):
    profile = _name('cli-arq')
    osc('device', 'profile', 'create', profile, json.dumps([
        {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL_N3000': 'required',
         'accel:bitstream_id': 'bs-gzip-1'}]))

    created = osc('arq', 'create', profile)
    assert created['state'] == 'Initial'
    assert created['device_profile_name'] == profile
    assert created['instance_uuid'] is None
    assert created['attach_handle_info'] == {}
    arq = created['uuid']

    listed = {a['uuid']: a for a in osc('arq', 'list')}
    assert listed[arq]['state'] == 'Initial'
    assert listed[arq]['device_profile_name'] == profile

    instance = str(uuid.uuid4())
    rp_uuid = cyborg.rp_uuid('region0')
    # The CLI wants a project id too, but sends only the three bind fields.
    bound = osc('arq', 'bind', arq, cyborg.host, instance, rp_uuid,
                uuid.uuid4().hex)
    assert bound['uuid'] == arq
    assert bound['state'] in ('BindStarted', 'Bound')
    assert bound['hostname'] == cyborg.host
    assert bound['instance_uuid'] == instance
    assert bound['device_rp_uuid'] == rp_uuid

    shown = _show_until(osc, arq, ('Bound', 'BindFailed'))
    assert shown['state'] == 'Bound'
    assert shown['attach_handle_type'] == 'PCI'
    assert shown['attach_handle_info'] == HANDLES['region0']
    assert cyborg.deployable('region0')['bitstream_id'] == 'bs-gzip-1'

    long_list = {a['uuid']: a for a in osc('arq', 'list', '--long')}
    assert long_list[arq]['hostname'] == cyborg.host
    assert long_list[arq]['attach_handle_info'] == HANDLES['region0']

    unbound = osc('arq', 'unbind', arq)
    assert unbound['state'] == 'Unbound'
    assert unbound['instance_uuid'] is None
    assert unbound['hostname'] is None
    assert unbound['attach_handle_info'] == {}

    out = osc('arq', 'delete', arq, fmt=False)
    assert out.strip() == 'Deleted accelerator_request %s' % arq
    assert arq not in {a['uuid'] for a in osc('arq', 'list')}
    with pytest.raises(CommandFailed) as gone:
        osc('arq', 'show', arq)
    assert 'accelerator_request not found: %s' % arq in gone.value.stderr
    osc('device', 'profile', 'delete', profile, fmt=False)


def test_arq_bind_that_fails_is_shown_as_bind_failed(osc, cyborg):
    profile = _name('cli-refused')
    osc('device', 'profile', 'create', profile, json.dumps([
        {'resources:FPGA': '1', 'accel:bitstream_id': 'bs-refused'}]))
    arq = osc('arq', 'create', profile)['uuid']
    osc('arq', 'bind', arq, cyborg.host, str(uuid.uuid4()),
        cyborg.rp_uuid('region1'), uuid.uuid4().hex)

    shown = _show_until(osc, arq, ('Bound', 'BindFailed'))
    assert shown['state'] == 'BindFailed'
    assert shown['attach_handle_info'] == {}
    # The region was not programmed and its handle is free again.
    region = cyborg.deployable('region1')
    assert region['bitstream_id'] is None
    reason = requests.get('%s/v2/accelerator_requests/%s' % (cyborg.url, arq),
                          timeout=10).json()['state_reason']
    assert 'PR interface id mismatch' in reason

    osc('arq', 'delete', arq, fmt=False)
    osc('device', 'profile', 'delete', profile, fmt=False)
