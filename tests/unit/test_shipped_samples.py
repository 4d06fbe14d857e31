"""Samples shipped in etc/ (and share/cyborg_like/ of the package) say
what the code does."""

import os

import yaml

from cyborg_like.conf import CONF
from cyborg_like.drivers import fake

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ETC = os.path.join(ROOT, 'etc', 'cyborg_like')


def test_fake_inventory_sample_is_the_built_in_hardware():
    """The sample describes what the fake driver reports without an
    inventory file; the driver reads it as the same devices."""
    path = os.path.join(ETC, 'fake-inventory.yaml.sample')
    with open(path) as f:
        assert yaml.safe_load(f) == fake.DEFAULT_INVENTORY

    CONF.set_override('inventory_file', path, group='fake_driver')
    try:
        from_sample = fake.FakeDriver(CONF).discover()
    finally:
        CONF.clear_override('inventory_file', group='fake_driver')
    built_in = fake.FakeDriver(CONF).discover()
    assert [d.to_dict() for d in from_sample] == \
        [d.to_dict() for d in built_in]
    assert [d.model for d in built_in] == ['PAC Arria 10 GX', 'Tesla T4']


def test_the_built_in_devices_carry_cyborgs_fake_trait():
    """Profiles written for Cyborg's fake driver (trait:CUSTOM_FAKE_DEVICE)
    find every built-in deployable, beside its own traits."""
    deployables = [d for device in fake.FakeDriver(CONF).discover()
                   for d in device.deployables]
    assert len(deployables) == 3
    for deployable in deployables:
        traits = {v for k, v in deployable.attributes.items()
                  if k.startswith('trait')}
        assert fake.FAKE_DEVICE_TRAIT in traits, deployable.name
        assert len(traits) == 3, traits
