"""The hardware-test machinery itself: preload, testbeds, fake tools.

If these fail, every driver test below them would prove nothing.
"""

import os
import subprocess

import pyudev


def pci_addresses():
    return sorted(d.sys_name for d in
                  pyudev.Context().list_devices(subsystem='pci'))


def test_the_umockdev_preload_is_in_this_process():
    with open('/proc/self/maps') as f:
        assert 'libumockdev-preload.so' in f.read()


def test_testbeds_switch_at_run_time(testbed):
    testbed('intel_pac_n3000')
    assert '0000:60:00.0' in pci_addresses()

    testbed('nic_x710_sriov')
    addresses = pci_addresses()
    assert '0000:60:00.0' not in addresses
    assert {'0000:3b:00.0', '0000:3b:02.3', '0000:d8:00.0'} <= set(addresses)


def test_writes_land_in_the_tests_own_copy(testbed):
    bed = testbed('intel_pac_n3000')
    port = ('/sys/bus/pci/devices/0000:60:00.0/fpga_region/region0/'
            'dfl-port.0/afu_id')
    with open(port, 'w') as f:      # through the preload, like a tool
        f.write('0' * 32 + '\n')
    assert bed.read(port) == '0' * 32 + '\n'


def test_fake_tools_refuse_to_touch_the_real_sys(fake_tools, monkeypatch):
    monkeypatch.delenv('UMOCKDEV_DIR', raising=False)
    for tool in ('fpgaconf', 'xbmgmt'):
        result = subprocess.run([tool, 'program'], capture_output=True,
                                text=True)
        assert result.returncode == 1
        assert 'refusing to run outside a umockdev testbed' in result.stderr
    assert fake_tools.calls() == []


def test_fake_tools_are_first_on_path(fake_tools):
    for tool in ('fpgaconf', 'xbmgmt'):
        found = subprocess.run(['sh', '-c', 'command -v ' + tool],
                               capture_output=True, text=True).stdout
        assert os.path.dirname(found.strip()).endswith(
            os.path.join('tests', 'hardware', 'fake_tools'))
