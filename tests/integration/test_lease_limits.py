"""A project's lease limits ([leases] project_max_devices and
project_max_device_hours, db/lease_limits.py) under leases of one project
created at once, on real MariaDB and PostgreSQL (SQLite serialises
writers, so its race cannot fail): each lease is of a device of its own,
so no device lock makes them take turns; the project's lock alone keeps
them within the limit (docs/leases.md)."""

import concurrent.futures
import datetime
import os
import threading

import pytest
import sqlalchemy as sa
import yaml

from cyborg_like.common import exception
from cyborg_like.conductor import lease_steps as leases
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import hosts
from cyborg_like.db import inventory
from cyborg_like.db import models
from cyborg_like.drivers import fake


pytestmark = pytest.mark.integration

THREADS = 8
HOST = 'gpus-1.example.org'


def _gpus(n):
    return {'devices': [
        {'type': 'GPU', 'vendor': '0x10de', 'model': 'T4',
         'pci_address': '0000:%02x:00.0' % (0x10 + i),
         'deployables': [{'name': 'gpu%d' % i, 'attributes': {'rc': 'PGPU'},
                          'pci_functions': ['0000:%02x:00.0' % (0x10 + i)]}]}
        for i in range(n)]}


@pytest.fixture(scope='module')
def gpus(world, tmp_path_factory):
    """The uuids of eight GPUs of a host of their own, beside the world's
    FPGA."""
    path = os.path.join(str(tmp_path_factory.mktemp('gpus')), 'gpus.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump(_gpus(THREADS), f)
    world_inventory = CONF.fake_driver.inventory_file
    CONF.set_override('inventory_file', path, group='fake_driver')
    try:
        found = fake.FakeDriver(CONF).discover()
    finally:
        CONF.set_override('inventory_file', world_inventory,
                          group='fake_driver')
    inventory.reconcile(HOST, [d.to_dict() for d in found], 'g0')
    with db_api.reader() as session:
        return session.scalars(
            sa.select(models.Device.uuid)
            .where(models.Device.hostname == HOST)
            .order_by(models.Device.id)).all()


def _race(project, gpus, day, hours, limits):
    """Eight leases of ``project`` at once, each of one GPU of its own
    for the same window: the outcomes (a lease, or the error)."""
    start = threading.Barrier(THREADS)
    now = hosts.utcnow()
    begins = datetime.datetime.combine(
        (now + datetime.timedelta(days=day)).date(), datetime.time(8))
    window = {'start': begins, 'end': begins + datetime.timedelta(
        hours=hours), 'timezone': 'UTC'}

    def create(n):
        start.wait()
        try:
            return leases.create(dict(window, devices=[gpus[n]]), project,
                                 now, 28, 2000, 300, limits=limits)
        except exception.LeaseLimitExceeded as error:
            return error

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(create, range(THREADS)))


def _split(outcomes):
    granted = [o for o in outcomes if isinstance(o, dict)]
    refused = [o for o in outcomes
               if isinstance(o, exception.LeaseLimitExceeded)]
    assert len(granted) + len(refused) == THREADS, outcomes
    return granted, refused


def test_leases_made_at_once_stay_within_the_devices_limit(world, gpus):
    granted, refused = _split(_race('greedy', gpus, 3, 1,
                                    {'devices': 3, 'device_hours': -1}))
    assert len(granted) == 3, granted
    assert {e.kwargs['what'] for e in refused} == {'devices'}
    assert {(e.kwargs['in_use'], e.kwargs['limit']) for e in refused} == {
        (3, 3)}


def test_leases_made_at_once_stay_within_the_device_hours_limit(world,
                                                               gpus):
    """Two-hour windows of a device each, seven device-hours allowed:
    three fit."""
    granted, refused = _split(_race('hungry', gpus, 5, 2,
                                    {'devices': -1, 'device_hours': 7}))
    assert len(granted) == 3, granted
    assert {e.kwargs['what'] for e in refused} == {'device_hours'}
    assert {e.kwargs['in_use'] for e in refused} == {6.0}
