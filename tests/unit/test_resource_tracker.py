"""The agent's tracker: drivers that fail, and reporting only changes."""

import threading
import time

import oslo_messaging as messaging

from cyborg_like.agent import resource_tracker
from cyborg_like.common import exception
from cyborg_like.conf import CONF
from cyborg_like.drivers import base
from cyborg_like.drivers import fake


class Conductor:
    """Records the reports a real conductor would receive."""

    def __init__(self):
        self.reports = []
        self.heartbeats = []

    def report_inventory(self, ctxt, host, devices, inventory_hash):
        self.reports.append(devices)
        return {'added': len(devices)}

    def heartbeat(self, ctxt, host, agent_version, inventory_hash, health):
        self.heartbeats.append((inventory_hash, health))


class Flaky(base.AcceleratorDriver, base.HealthReporting):
    name = 'flaky'

    def __init__(self, conf):
        super().__init__(conf)
        self.fail = False

    def health(self):
        if self.fail:
            raise RuntimeError('NVML went away')
        return [base.DeviceHealth(self.discover()[0].controlpath_id,
                                  utilization={'gpu_percent': 3})]

    def discover(self):
        if self.fail:
            raise RuntimeError('NVML went away')
        return [base.Device(
            type='GPU', vendor='0x10de', model='A2',
            controlpath_id={'cpid_type': 'PCI', 'cpid_info': {
                'domain': '0000', 'bus': '01', 'device': '00',
                'function': '0'}})]


def _tracker(drivers):
    conductor = Conductor()
    return resource_tracker.ResourceTracker('h1', CONF, conductor,
                                            drivers=drivers), conductor


def test_reports_only_changes():
    tracker, conductor = _tracker({'fake': fake.FakeDriver(CONF)})
    assert tracker.update_inventory() is True
    assert tracker.update_inventory() is False
    assert tracker.update_inventory(force=True) is True
    assert len(conductor.reports) == 2
    tracker.heartbeat()
    # The built-in devices' readings (drivers/fake_readings.py), one each.
    [(reported_hash, health)] = conductor.heartbeats
    assert reported_hash == tracker._reported_hash
    assert [h['healthy'] for h in health] == [True, True]


def test_failing_driver_keeps_its_devices_and_spares_the_others():
    flaky = Flaky(CONF)
    tracker, conductor = _tracker({'fake': fake.FakeDriver(CONF),
                                   'flaky': flaky})
    tracker.update_inventory()
    assert len(conductor.reports[-1]) == 3
    flaky.fail = True
    assert tracker.update_inventory() is False    # nothing vanished
    assert len(tracker.discover()) == 3


def test_unreachable_conductor_means_report_again_later():
    tracker, conductor = _tracker({'fake': fake.FakeDriver(CONF)})

    def down(*args, **kwargs):
        raise TimeoutError('no conductor')
    conductor.report_inventory = down
    try:
        tracker.update_inventory()
    except TimeoutError:
        pass
    assert tracker._reported_hash is None
    del conductor.report_inventory
    assert tracker.update_inventory() is True


def test_enabled_drivers_load_through_stevedore():
    CONF.set_override('enabled_drivers', ['fake', 'no-such-driver'],
                      group='agent')
    try:
        drivers = resource_tracker.load_drivers(CONF)
    finally:
        CONF.clear_override('enabled_drivers', group='agent')
    assert list(drivers) == ['fake']
    assert isinstance(drivers['fake'], fake.FakeDriver)


def test_health_comes_from_drivers_that_report_it():
    flaky = Flaky(CONF)
    tracker, conductor = _tracker({'fake': fake.FakeDriver(CONF),
                                   'flaky': flaky})
    tracker.heartbeat()
    [(_, health)] = conductor.heartbeats
    # The fake's two built-in devices, then the flaky driver's reading.
    assert len(health) == 3
    assert health[-1]['utilization'] == {'gpu_percent': 3}
    flaky.fail = True
    tracker.heartbeat()      # a failing driver does not stop the heartbeat
    assert [h['controlpath_id'] for h in conductor.heartbeats[-1][1]] == \
        [h['controlpath_id'] for h in health[:2]]


class MdevDriver(fake.FakeDriver, base.AttachPreparing):
    """Records what it is asked to prepare, as the nvidia driver's mdevs."""

    def __init__(self, conf):
        super().__init__(conf)
        self.prepared = []

    def prepare_attach_handle(self, controlpath_id, attach_handle):
        self.prepared.append(attach_handle['uuid'])

    def release_attach_handle(self, controlpath_id, attach_handle):
        pass


def test_handles_in_use_are_restored_once_after_start():
    driver = MdevDriver(CONF)
    tracker, conductor = _tracker({'fake': driver})
    held = {'driver_name': 'fake', 'controlpath_id': {},
            'attach_handle': {'uuid': 'h1', 'attach_type': 'MDEV',
                              'attach_info': {}}}
    original = conductor.report_inventory
    conductor.report_inventory = lambda *a: dict(original(*a), bound=[held])
    tracker.update_inventory()
    tracker.update_inventory(force=True)
    assert driver.prepared == ['h1']


def test_first_report_is_retried_until_a_conductor_takes_it(caplog):
    tracker, conductor = _tracker({'fake': fake.FakeDriver(CONF)})
    accept = conductor.report_inventory
    refusals = [messaging.MessagingTimeout('no conductor yet')] * 3

    def not_yet(*args):
        if refusals:
            raise refusals.pop()
        return accept(*args)
    conductor.report_inventory = not_yet
    started = time.monotonic()
    assert tracker.report_first(threading.Event(), max_pause=0.2) is True
    # Pauses 0.1, 0.2, 0.2 (capped): well under a discovery interval.
    assert 0.5 <= time.monotonic() - started < 2
    assert len(conductor.reports) == 1
    warnings = [r for r in caplog.records if r.levelname == 'WARNING']
    assert len(warnings) == 3
    assert all(r.exc_info is None for r in warnings)    # no traceback
    assert 'MessagingTimeout' in warnings[0].getMessage()


def test_first_report_stops_when_the_agent_stops():
    tracker, conductor = _tracker({'fake': fake.FakeDriver(CONF)})

    def never(*args):
        raise messaging.MessagingTimeout('no conductor')
    conductor.report_inventory = never
    stopping = threading.Event()
    stopping.set()
    assert tracker.report_first(stopping, max_pause=0.2) is False


def test_a_refused_first_report_is_left_to_the_discovery_loop():
    tracker, conductor = _tracker({'fake': fake.FakeDriver(CONF)})
    calls = []

    def refuse(*args):
        calls.append(args)
        raise exception.InvalidInventory(host='h1', reason='bad')
    conductor.report_inventory = refuse
    # Not retried quickly (the answer would not change), but the agent
    # carries on: its loops start and retry at the discovery interval.
    assert tracker.report_first(threading.Event(), max_pause=0.2) is True
    assert len(calls) == 1
    assert tracker._reported_hash is None
