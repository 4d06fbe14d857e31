"""The fake driver's readings that change over time (fake_readings.py),
read through the driver's real health() at times the test chooses."""

import pytest
import yaml

from cyborg_like.conf import CONF
from cyborg_like.drivers import fake
from cyborg_like.drivers import fake_readings
from cyborg_like.drivers import pci

T0 = 1_800_000_000.0
GPU_KEYS = {'gpu_percent', 'memory_percent', 'memory_used_bytes',
            'memory_total_bytes', 'temperature_c', 'power_w'}


def _driver(inventory=None, tmp_path=None):
    if inventory is not None:
        path = tmp_path / 'inventory.yaml'
        path.write_text(yaml.safe_dump(inventory))
        CONF.set_override('inventory_file', str(path), group='fake_driver')
    return fake.FakeDriver(CONF)


@pytest.fixture(autouse=True)
def _no_inventory_file():
    yield
    CONF.clear_override('inventory_file', group='fake_driver')


def _at(driver, now):
    driver.clock = lambda: now
    return {pci.address_of(h.controlpath_id): h for h in driver.health()}


def test_the_built_in_devices_report_readings_that_change():
    """Without an inventory file (the all-in-one) both devices are
    healthy with the readings of their real drivers, and the readings of
    one heartbeat differ from the next's (10 s later)."""
    driver = _driver()
    first, later = _at(driver, T0), _at(driver, T0 + 10)
    assert sorted(first) == ['0000:5e:00.0', '0000:af:00.0']
    gpu, fpga = first['0000:af:00.0'], first['0000:5e:00.0']
    assert gpu.healthy and fpga.healthy
    assert set(gpu.utilization) == GPU_KEYS
    assert set(fpga.utilization) == {'temperature_c', 'board_power_w'}
    assert gpu.utilization != later['0000:af:00.0'].utilization
    assert fpga.utilization != later['0000:5e:00.0'].utilization


def test_values_swing_within_bounds_and_totals_stay():
    """Over a whole period each value stays within its swing, totals do
    not move, and integers stay integers."""
    readings = fake.DEFAULT_INVENTORY['devices'][1]['readings']
    seen = [fake_readings.at(readings, T0 + s).utilization
            for s in range(0, 60, 3)]
    for key in ('gpu_percent', 'temperature_c', 'power_w',
                'memory_used_bytes'):
        values = [u[key] for u in seen]
        assert min(values) >= readings[key] * 0.8 - 0.5, key
        assert max(values) <= readings[key] * 1.2 + 0.5, key
        assert len(set(values)) > 5, (key, values)
    assert {u['memory_total_bytes'] for u in seen} == {16106127360}
    assert all(isinstance(u['gpu_percent'], int) for u in seen)


def test_percentages_and_memory_are_bounded():
    reading = fake_readings.at(
        {'gpu_percent': 95, 'memory_used_bytes': 100,
         'memory_total_bytes': 100, 'swing': 0.5, 'period_seconds': 4},
        T0 + 1)
    assert 0 <= reading.utilization['gpu_percent'] <= 100
    assert reading.utilization['memory_used_bytes'] <= 100
    assert reading.healthy is None and reading.reasons is None


def test_samples_cycle_and_carry_health(tmp_path):
    """A device playing a fault: one sample after the other, each for
    step_seconds, its verdict replacing the fixed health's."""
    inventory = {'devices': [dict(
        fake.DEFAULT_INVENTORY['devices'][1],
        health={'healthy': True, 'utilization': {'ecc_errors': 0}},
        readings={'memory_total_bytes': 100, 'step_seconds': 30,
                  'samples': [{'gpu_percent': 10},
                              {'gpu_percent': 99, 'healthy': False,
                               'reasons': ['too hot']}]})]}
    driver = _driver(inventory, tmp_path)
    step = 30 * (int(T0) // 30)     # the start of an even step
    if (step // 30) % 2:
        step += 30
    (well,) = _at(driver, step + 1).values()
    (ill,) = _at(driver, step + 31).values()
    (again,) = _at(driver, step + 61).values()
    assert (well.healthy, well.reasons) == (True, [])
    assert well.utilization == {'ecc_errors': 0, 'gpu_percent': 10,
                                'memory_total_bytes': 100}
    assert (ill.healthy, ill.reasons) == (False, ['too hot'])
    assert ill.utilization['gpu_percent'] == 99
    assert again.to_dict() == well.to_dict()


def test_devices_without_readings_send_none(tmp_path):
    """Inventories of the tests name what they report: an entry with
    neither health nor readings stays of unknown health."""
    entry = {k: v for k, v in fake.DEFAULT_INVENTORY['devices'][1].items()
             if k != 'readings'}
    assert _driver({'devices': [entry]}, tmp_path).health() == []
