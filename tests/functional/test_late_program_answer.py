"""A programming's answer that arrives after its operation was failed (the
host looked down through a partition, and a rollback may have programmed
the region since) changes nothing: the operation succeeds and the
region's bitstream is recorded together, only while the operation runs
(db/deployables.py ``finish_program``; tests/cluster saw the late answer
overwrite the rollback's bitstream)."""

import pytest
import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api as db_api
from cyborg_like.db import deployables
from cyborg_like.db import models
from cyborg_like.db import operations
from tests import arq_world


@pytest.fixture
def world(tmp_path):
    with arq_world.World.on_sqlite(tmp_path) as world:
        yield world


def _region():
    with db_api.reader() as session:
        region = session.scalars(sa.select(models.Deployable)
                                 .order_by(models.Deployable.id)).first()
        return region.uuid, region.bitstream_id


def _programming(uuid):
    _job, operation, _region = deployables.start_program(
        uuid, 'bs-new', 'project')
    assert operations.apply(operation['uuid'], states.START)
    return operation['uuid']


def test_a_late_answer_of_a_failed_operation_changes_nothing(world):
    uuid, before = _region()
    operation = _programming(uuid)
    assert operations.apply(operation, states.FAIL,
                            'The host went down during the operation.')
    assert not deployables.finish_program(operation, uuid, 'bs-new')
    assert _region() == (uuid, before)
    assert operations.get(operation)['state'] == states.FAILED


def test_an_answer_in_time_records_the_bitstream(world):
    uuid, _before = _region()
    operation = _programming(uuid)
    assert deployables.finish_program(operation, uuid, 'bs-new')
    assert _region() == (uuid, 'bs-new')
    assert operations.get(operation)['state'] == states.SUCCEEDED
