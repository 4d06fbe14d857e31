"""The generic pci driver against a umockdev testbed: a dual-port X710 with
4 VFs on port 0, and an NVMe SSD (testbeds/nic_x710_sriov.umockdev)."""

import json

import pytest
import stevedore

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import base
from cyborg_like.drivers import pci

X710 = {'vendor_id': '8086', 'product_id': '1572', 'device_type': 'NIC'}
PF0 = '/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0'


@pytest.fixture
def whitelist(conf, testbed):
    testbed('nic_x710_sriov')

    def configure(*entries):
        values = [e if isinstance(e, str) else json.dumps(e)
                  for e in entries]
        conf.set_override('passthrough_whitelist', values,
                          group='pci_driver')
        return pci.PciDriver(conf)
    return configure


def by_address(devices):
    return {pci.address_of(d.controlpath_id): d for d in devices}


def handles(deployable):
    return [pci.address_of({'cpid_info': h.attach_info})
            for h in deployable.attach_handles]


def test_loads_through_its_entry_point(conf):
    manager = stevedore.driver.DriverManager(
        base.NAMESPACE, 'pci', invoke_on_load=True, invoke_args=(conf,))
    assert isinstance(manager.driver, pci.PciDriver)


def test_an_empty_whitelist_offers_nothing(whitelist):
    assert whitelist().discover() == []


def test_vfs_are_the_attach_handles_of_their_pf(whitelist):
    devices = by_address(whitelist(X710).discover())

    # Both ports match; the VFs (8086:154c) are never devices themselves.
    assert sorted(devices) == ['0000:3b:00.0', '0000:3b:00.1']
    port0 = devices['0000:3b:00.0']
    assert (port0.type, port0.vendor, port0.model) == (
        'NIC', '0x8086', 'Ethernet Controller X710 for 10GbE SFP+')
    [deployable] = port0.deployables
    assert deployable.name == '0000:3b:00.0'
    assert deployable.driver_name == 'pci'
    assert handles(deployable) == ['0000:3b:02.0', '0000:3b:02.1',
                                   '0000:3b:02.2', '0000:3b:02.3']
    assert deployable.num_accelerators == 4
    assert port0.std_board_info == {
        'device_id': '0x1572', 'class': '0x020000', 'numa_node': '0',
        'sriov_totalvfs': '64', 'sriov_numvfs': '4'}


def test_without_vfs_the_function_is_its_own_handle(whitelist):
    port1 = by_address(whitelist(X710).discover())['0000:3b:00.1']
    [deployable] = port1.deployables
    assert handles(deployable) == ['0000:3b:00.1']
    assert deployable.num_accelerators == 1


def test_disabling_sriov_turns_the_pf_into_the_handle(whitelist, testbed):
    bed = testbed('nic_x710_sriov')
    for index in range(4):
        bed.remove('%s/virtfn%d' % (PF0, index))
    bed.write(PF0 + '/sriov_numvfs', '0\n')

    port0 = by_address(whitelist(X710).discover())['0000:3b:00.0']
    assert handles(port0.deployables[0]) == ['0000:3b:00.0']


def test_resource_class_and_traits_come_from_the_entry(whitelist):
    entry = dict(X710, resource_class='SRIOV_NET_VF',
                 traits=['CUSTOM_INTEL_X710', 'CUSTOM_PHYSNET_DATA'])
    port0 = by_address(whitelist(entry).discover())['0000:3b:00.0']
    assert port0.deployables[0].attributes == {
        'rc': 'SRIOV_NET_VF', 'trait0': 'CUSTOM_PCI_8086_1572',
        'trait1': 'CUSTOM_INTEL_X710', 'trait2': 'CUSTOM_PHYSNET_DATA'}


def test_address_glob_narrows_the_match(whitelist):
    devices = whitelist(dict(X710, address='0000:3b:00.1')).discover()
    assert list(by_address(devices)) == ['0000:3b:00.1']


def test_class_id_narrows_the_match(whitelist):
    ssd = {'vendor_id': '0x144D', 'product_id': 'A824',
           'device_type': 'SSD', 'class_id': '0108'}
    wrong_class = dict(X710, class_id='0300')

    devices = by_address(whitelist(ssd, wrong_class).discover())

    assert list(devices) == ['0000:d8:00.0']
    assert devices['0000:d8:00.0'].type == 'SSD'
    assert devices['0000:d8:00.0'].model == 'NVMe SSD Controller PM173X'


def test_a_json_list_holds_several_entries_and_the_first_match_wins(
        whitelist):
    value = json.dumps([dict(X710, resource_class='CUSTOM_FIRST'),
                        dict(X710, resource_class='CUSTOM_SECOND')])
    devices = whitelist(value).discover()
    assert {d.deployables[0].attributes['rc'] for d in devices} == {
        'CUSTOM_FIRST'}


def test_the_inventory_is_valid_on_the_wire(whitelist):
    ssd = {'vendor_id': '144d', 'product_id': 'a824', 'device_type': 'SSD'}
    devices = whitelist(X710, ssd).discover()
    inventory.validate('host', [d.to_dict() for d in devices])
    assert len(devices) == 3


# Explicit ids: gabbi's pytest plugin takes any test id with a ':' for one
# of its own.
@pytest.mark.parametrize('value, message', [
    ('{"vendor_id": "8086"', 'invalid passthrough_whitelist value'),
    (json.dumps({'vendor_id': '8086', 'product_id': '1572'}),
     '"device_type" must be one of GPU, FPGA, AICHIP, QAT, NIC, SSD'),
    (json.dumps(dict(X710, vendor_id='intel')),
     '"vendor_id" must be a hex string'),
    (json.dumps({'product_id': '1572', 'device_type': 'NIC'}),
     '"vendor_id" is required'),
    (json.dumps(dict(X710, traits=['custom_lower'])),
     "'custom_lower' is not a valid Placement name"),
    (json.dumps(dict(X710, physical_network='data')),
     'unknown key(s) physical_network'),
], ids=['bad-json', 'no-type', 'bad-hex', 'no-vendor', 'bad-trait',
        'unknown-key'])
def test_a_bad_whitelist_fails_at_start_up(whitelist, value, message):
    with pytest.raises(exception.DriverError) as error:
        whitelist(value)
    assert message in str(error.value)
    assert 'Driver pci failed' in str(error.value)
