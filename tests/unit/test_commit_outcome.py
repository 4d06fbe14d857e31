"""A COMMIT that loses its connection may still have been carried out (a
Galera node killed as it committed: the other nodes had its transaction).
db/api.py's writer asks the change log through a new connection and
answers as the database says (tests/cluster/test_galera_node.py kills the
node for real)."""

import time

import pytest
import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests import lost_commits


@pytest.fixture
def database(migrated_db):
    return db_api.get_engine()


@pytest.fixture
def lose_next_commit(database, monkeypatch):
    """``lose_next_commit(carried_out)``: the next COMMIT fails as a lost
    connection does, after committing or not."""
    pending = []
    lost_commits.install(database, monkeypatch,
                         lambda: pending.pop() if pending else None)
    return pending.append


def _add_host(name):
    with db_api.writer() as session:
        session.add(models.Host(hostname=name))
        return name


def _rows():
    with db_api.reader() as session:
        hosts = session.scalars(sa.select(models.Host.hostname)).all()
        commits = session.scalars(sa.select(models.Change.commits)).all()
    return sorted(hosts), commits


def _call(method='add_host'):
    return deadlines.serving(
        context.RequestContext(deadline=time.time() + 30), method)


def test_a_lost_commit_that_was_carried_out_is_answered_as_done(
        lose_next_commit):
    lose_next_commit(True)
    with _call():
        assert _add_host('h1') == 'h1'
    assert _rows() == (['h1'], [1])


def test_a_lost_commit_that_was_not_carried_out_is_a_503(lose_next_commit):
    lose_next_commit(False)
    with _call(), pytest.raises(exception.ServiceUnavailable):
        _add_host('h1')
    assert _rows() == ([], [])


def test_a_later_transaction_of_the_call_is_told_apart(lose_next_commit):
    """The call's second transaction lost at COMMIT: the change row it
    widened counts two commits if it was carried out, one if not."""
    with _call():
        _add_host('first')
        lose_next_commit(False)
        with pytest.raises(exception.ServiceUnavailable):
            _add_host('lost')
        lose_next_commit(True)
        assert _add_host('second') == 'second'
    assert _rows() == (['first', 'second'], [2])


def test_a_report_the_log_does_not_hold_stays_an_error(lose_next_commit):
    """An agent's report leaves no change row, so nothing tells whether
    it committed: an error, and the agent reports again (idempotent)."""
    lose_next_commit(True)
    with _call('report_inventory'), \
            pytest.raises(exception.ServiceUnavailable):
        _add_host('h1')
    assert _rows() == (['h1'], [])
