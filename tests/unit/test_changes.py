"""The change log is written with the write it records (db/changes.py):
one record per served call, widened by its later transactions, none for a
rolled-back write, an agent's report or work outside a call."""

import datetime
import time

import pytest
import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.db import api as db_api
from cyborg_like.db import changes
from cyborg_like.db import models


def _caller(deadline=None):
    return context.RequestContext(user_id='alice', project_id='p1',
                                  request_id='req-1', deadline=deadline)


def _add_host(name):
    with db_api.writer() as session:
        session.add(models.Host(hostname=name))


def _add_profile(name):
    with db_api.writer() as session:
        session.add(models.DeviceProfile(uuid='uuid-' + name, name=name,
                                         profile_json='{}'))


def _log():
    return changes.list_changes({}, 100)


def test_a_calls_transactions_make_one_record(migrated_db):
    with deadlines.serving(_caller(), 'create_things', {'name': 'x'}):
        _add_host('h1')
        _add_profile('p')
    [change] = _log()
    assert change['request_id'] == 'req-1'
    assert (change['user_id'], change['project_id']) == ('alice', 'p1')
    assert change['method'] == 'create_things'
    assert change['written'] == ['device_profiles', 'hosts']
    # What it named, then the uuid of the row it created.
    assert change['target'] == ['x', 'uuid-p']


def test_a_rolled_back_write_leaves_no_record(migrated_db):
    late = _caller(deadline=time.time() - 1)
    with deadlines.serving(late, 'create_things'), \
            pytest.raises(exception.RequestDeadlinePassed):
        _add_host('late')
    assert _log() == []


def test_a_later_transaction_that_fails_leaves_the_record(migrated_db):
    caller = _caller()
    with deadlines.serving(caller, 'create_things'):
        _add_host('h1')
        with pytest.raises(Exception):
            _add_host('h1')         # unique hostname: the commit fails
        _add_profile('p')
    [change] = _log()
    assert change['written'] == ['device_profiles', 'hosts']


def test_a_failed_first_commit_leaves_the_next_to_record(migrated_db):
    caller = _caller()
    _add_host('taken')
    with deadlines.serving(caller, 'create_things'):
        with pytest.raises(Exception):
            _add_host('taken')
        assert deadlines.served().change_id is None
        _add_profile('p')
    [change] = _log()
    assert change['written'] == ['device_profiles']


def test_agents_reports_and_work_outside_calls_are_not_logged(migrated_db):
    for method in changes.UNRECORDED:
        with deadlines.serving(_caller(), method):
            _add_host(method)
    _add_host('periodic')
    assert _log() == []


def test_reads_write_nothing_and_leave_nothing(migrated_db):
    with deadlines.serving(_caller(), 'get_things'):
        with db_api.reader() as session:
            session.scalars(sa.select(models.Host)).all()
    assert _log() == []


def test_old_records_are_pruned(migrated_db):
    with deadlines.serving(_caller(), 'create_things'):
        _add_host('h1')
    changes.prune(3600)
    assert len(_log()) == 1
    with db_api.writer() as session:
        session.execute(sa.update(models.Change).values(
            created_at=datetime.datetime(2000, 1, 1)))
    changes.prune(3600)
    assert _log() == []
