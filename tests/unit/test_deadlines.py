"""A write of an RPC call that would commit after its caller's deadline is
rolled back (common/deadlines.py, checked by db/api.py's writer)."""

import time

import pytest
import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.db import api as db_api
from cyborg_like.db import models


@pytest.fixture
def database(migrated_db):
    return migrated_db


def _add_host(name, work=lambda: None):
    with db_api.writer() as session:
        session.add(models.Host(hostname=name))
        work()                      # the rest of the call, before commit


def _hosts():
    with db_api.reader() as session:
        return session.scalars(sa.select(models.Host.hostname)).all()


def test_a_write_past_its_deadline_is_rolled_back(database):
    late = context.RequestContext(deadline=time.time() + 30)

    def outlive_the_deadline():
        # The caller stops waiting while the write is under way (its
        # deadline moved behind now: no time passes in the test).
        late.deadline = time.time() - 1
    with deadlines.serving(late), \
            pytest.raises(exception.RequestDeadlinePassed):
        _add_host('late', outlive_the_deadline)
    assert _hosts() == []


def test_writes_in_time_or_outside_a_call_commit(database):
    in_time = context.RequestContext(deadline=time.time() + 30)
    with deadlines.serving(in_time):
        _add_host('in-time')
    _add_host('no-call')                # a worker thread, a periodic task
    assert sorted(_hosts()) == ['in-time', 'no-call']
