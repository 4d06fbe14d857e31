"""The agent programs a region one job at a time, and never with an
older operation's job after a newer one's (agent/region_order.py): a
rollout's rollback and the canary job the broker held through a partition
arrive together."""

import pytest

from cyborg_like.agent import region_order
from cyborg_like.common import exception

CPID = {'cpid_type': 'PCI', 'cpid_info': '0000:b0:00.0'}


def _job(sequence, region='region0', cpid=CPID):
    return {'controlpath_id': cpid, 'deployable_name': region,
            'driver_name': 'fake', 'sequence': sequence}


def test_an_older_operation_after_a_newer_one_is_refused():
    order = region_order.RegionOrder()
    with order.turn(_job(8)):
        pass                                # the rollback's job, first
    with pytest.raises(exception.DriverError, match='newer operation'):
        with order.turn(_job(7)):           # the canary's, held back
            pytest.fail('programmed with the older job')


def test_newer_after_older_other_regions_and_binds_go_on():
    order = region_order.RegionOrder()
    ran = []
    for job in (_job(7), _job(8), _job(3, region='region1'),
                _job(None), _job(2, cpid=dict(CPID, cpid_info='x'))):
        with order.turn(job):
            ran.append(job['sequence'])
    assert ran == [7, 8, 3, None, 2]

