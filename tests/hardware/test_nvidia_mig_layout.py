"""MIG layouts applied by the nvidia_gpu driver through the real pynvml
against the fake NVML library (fake_nvml.c), whose A100 answers the MIG
management calls as an A100-SXM4-40GB does: profiles and their limits,
GPU and compute instances, a mode change pending until a reset, and
instances that outlive the process that made them."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cyborg_like.common import exception
from cyborg_like.common import inventory
from tests.hardware.nvml.devices import A100_ADDRESS
from tests.hardware.nvml.devices import A100_UUID

pytest_plugins = ('tests.hardware.nvml.fixtures',)

A100_CPID = {'cpid_type': 'PCI',
             'cpid_info': inventory.pci_address_info(A100_ADDRESS)}


@pytest.fixture
def a100(fake_nvml):
    """The A100: MIG capable (its profiles answer), MIG mode off."""
    fake_nvml.gpu(A100_UUID)['mig_profiles'] = 'a100-40gb'
    fake_nvml.write()
    return fake_nvml.gpu(A100_UUID)


def the_a100(driver):
    [device] = [d for d in driver.discover()
                if d.std_board_info['pci_address'] == A100_ADDRESS]
    return device


def migs(device):
    return {d.attributes['rc']: d for d in device.deployables
            if d.attributes['rc'].startswith('CUSTOM_MIG_')}


def test_a_layout_becomes_the_gpus_deployables(nvidia_driver, a100):
    assert nvidia_driver.mig_layout(A100_CPID) == []

    applied = nvidia_driver.apply_mig_layout(A100_CPID,
                                             ['3g.20gb', '4g.20gb'])

    assert applied == ['4g.20gb', '3g.20gb']
    assert nvidia_driver.mig_layout(A100_CPID) == applied
    device = the_a100(nvidia_driver)
    assert (device.vendor_board_info['mig_mode'],
            device.vendor_board_info['mig_layout']) == ('enabled', applied)
    found = migs(device)
    assert sorted(found) == ['CUSTOM_MIG_3G_20GB', 'CUSTOM_MIG_4G_20GB']
    small = found['CUSTOM_MIG_3G_20GB']
    assert small.attributes['trait3'] == 'CUSTOM_GPU_MIG_3G_20GB'
    [handle] = small.attach_handles
    # Never MDEV: a VM consumer would attach an mdev of that uuid.
    assert handle.attach_type == 'MIG'
    assert handle.attach_info['mig_uuid'].startswith('MIG-')
    assert handle.attach_info['profile'] == '3g.20gb'
    # The whole GPU is not offered beside its slices.
    [whole] = [d for d in device.deployables if d.name == A100_UUID]
    assert whole.num_accelerators == 0


def test_the_whole_gpu_back(nvidia_driver, a100):
    nvidia_driver.apply_mig_layout(A100_CPID, ['1g.5gb'] * 7)
    assert len(migs(the_a100(nvidia_driver))) == 1      # one rc, 7 devices
    assert len([d for d in the_a100(nvidia_driver).deployables
                if d.attributes['rc'] == 'CUSTOM_MIG_1G_5GB']) == 7

    assert nvidia_driver.apply_mig_layout(A100_CPID, []) == []

    device = the_a100(nvidia_driver)
    assert device.vendor_board_info['mig_mode'] == 'disabled'
    assert not migs(device)
    [whole] = device.deployables
    assert whole.num_accelerators == 1


@pytest.mark.parametrize('layout, reason', [
    (['5g.20gb'], 'offers no MIG profile 5g.20gb'),
    (['4g.20gb', '4g.20gb'], 'needs 8 compute slices; the GPU has 7'),
    (['1g.5gb'] * 8, 'needs 8 compute slices'),
    (['3g.20gb'] * 3, 'needs 9 compute slices'),
])
def test_a_layout_the_gpu_cannot_take_changes_nothing(nvidia_driver, a100,
                                                      layout, reason):
    nvidia_driver.apply_mig_layout(A100_CPID, ['7g.40gb'])

    with pytest.raises(exception.DriverError, match=reason):
        nvidia_driver.apply_mig_layout(A100_CPID, layout)

    assert nvidia_driver.mig_layout(A100_CPID) == ['7g.40gb']


def test_nvml_refusing_half_way_puts_the_layout_back(nvidia_driver, a100):
    """3g + 3g take all eight memory slices of an A100: a 1g after them
    passes the compute-slice check but NVML refuses to create it."""
    nvidia_driver.apply_mig_layout(A100_CPID, ['4g.20gb', '2g.10gb'])

    with pytest.raises(exception.DriverError,
                       match=r'refused .* was put back'):
        nvidia_driver.apply_mig_layout(A100_CPID,
                                       ['3g.20gb', '3g.20gb', '1g.5gb'])

    assert nvidia_driver.mig_layout(A100_CPID) == ['4g.20gb', '2g.10gb']


def test_a_mode_change_pending_a_reset_is_said(nvidia_driver, a100,
                                               fake_nvml):
    a100['mig_reset_required'] = 1
    fake_nvml.write()

    with pytest.raises(exception.DriverError, match='pending until the GPU '
                                                    'is reset'):
        nvidia_driver.apply_mig_layout(A100_CPID, ['7g.40gb'])

    assert the_a100(nvidia_driver).vendor_board_info['mig_mode'] == \
        'disabled'


def test_a_gpu_without_mig_refuses(nvidia_driver, fake_nvml):
    del fake_nvml.gpu(A100_UUID)['mig_mode']
    fake_nvml.write()
    with pytest.raises(exception.DriverError, match='not MIG capable'):
        nvidia_driver.apply_mig_layout(A100_CPID, ['7g.40gb'])


AGENT_RESTART_SCRIPT = textwrap.dedent('''
    import ctypes, json, sys
    lib = ctypes.CDLL(sys.argv[1])
    from oslo_config import cfg
    from cyborg_like.conf import nvidia_gpu as nvidia_gpu_conf
    from cyborg_like.drivers import nvidia_gpu

    conf = cfg.ConfigOpts()
    nvidia_gpu_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override('sysfs_root', sys.argv[2], group='nvidia_gpu')
    driver = nvidia_gpu.NvidiaGPUDriver(conf)
    found = {}
    for device in driver.discover():
        for d in device.deployables:
            for h in d.attach_handles:
                if 'mig_uuid' in h.attach_info:
                    found[h.attach_info['mig_uuid']] = d.attributes['rc']
    json.dump({'migs': found, 'changes': lib.fake_nvml_mig_changes()},
              sys.stdout)
''')


def test_an_agent_restart_finds_the_layout_and_applies_nothing(
        nvidia_driver, a100, fake_nvml, nvidia_sysfs):
    nvidia_driver.apply_mig_layout(A100_CPID, ['3g.20gb', '2g.10gb'])
    before = {h.attach_info['mig_uuid']: d.attributes['rc']
              for d in the_a100(nvidia_driver).deployables
              for h in d.attach_handles if 'mig_uuid' in h.attach_info}

    # A new process, as a restarted agent is: it discovers, nothing more.
    result = subprocess.run(
        [sys.executable, '-c', AGENT_RESTART_SCRIPT, fake_nvml.lib.path,
         nvidia_sysfs.root], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, FAKE_NVML_DATA=fake_nvml.data_path))
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)

    assert {k: v for k, v in seen['migs'].items() if k in before} == before
    assert seen['changes'] == 0


def test_health_tells_each_mig_devices_memory(nvidia_driver, a100):
    nvidia_driver.apply_mig_layout(A100_CPID, ['4g.20gb', '3g.20gb'])

    [health] = [h for h in nvidia_driver.health()
                if h.controlpath_id == A100_CPID]

    slices = health.utilization['mig_devices']
    assert sorted(s['profile'] for s in slices.values()) == [
        '3g.20gb', '4g.20gb']
    for mig_uuid, slice_ in slices.items():
        assert mig_uuid.startswith('MIG-')
        assert slice_['memory_total_bytes'] > 0
        assert 0 <= slice_['memory_used_bytes'] <= \
            slice_['memory_total_bytes']
    # Whole-GPU checks still judge the GPU.
    assert health.healthy
