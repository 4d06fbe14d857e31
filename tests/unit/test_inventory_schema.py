import copy

import pytest

from cyborg_like.common import exception
from cyborg_like.common import inventory
from cyborg_like.drivers import fake

from cyborg_like.conf import CONF


def _devices():
    driver = fake.FakeDriver(CONF)
    return [d.to_dict() for d in driver.discover()]


def test_fake_default_inventory_is_valid():
    devices = _devices()
    inventory.validate('h', devices)
    assert [d['type'] for d in devices] == ['FPGA', 'GPU']
    assert [len(d['deployables']) for d in devices] == [2, 1]


def test_fingerprint_is_stable_and_sensitive():
    devices = _devices()
    same = copy.deepcopy(devices)
    assert inventory.fingerprint(devices) == inventory.fingerprint(same)
    same[0]['deployables'][0]['bitstream_id'] = 'x'
    assert inventory.fingerprint(devices) != inventory.fingerprint(same)


@pytest.mark.parametrize('change, where', [
    (lambda d: d[0].pop('vendor'), "'vendor' is a required property"),
    (lambda d: d[0].update(type='TOASTER'), 'type'),
    (lambda d: d[0]['deployables'][0].update(num_accelerators=-1),
     'deployables/0/num_accelerators'),
    (lambda d: d[0]['deployables'][0]['attach_handles'][0].update(
        attach_type='USB'), 'attach_handles/0/attach_type'),
    (lambda d: d[0].update(colour='red'), 'colour'),
    (lambda d: d.append(copy.deepcopy(d[0])), 'share control path'),
])
def test_invalid_inventory_is_refused_with_where(change, where):
    devices = _devices()
    change(devices)
    with pytest.raises(exception.InvalidInventory) as raised:
        inventory.validate('compute-9', devices)
    assert 'compute-9' in str(raised.value)
    assert where in str(raised.value)


def test_pci_address_info():
    assert inventory.pci_address_info('0000:5e:00.1') == {
        'domain': '0000', 'bus': '5e', 'device': '00', 'function': '1'}
