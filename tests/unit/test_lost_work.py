"""The conductor's jobs say what each carries (conductor/workqueue.py),
and an unfinished operation of this conductor carried by no job at two
sweeps running is failed as lost (conductor/lost_work.py); one handed to
a job between the sweeps, or the agent's running playbook, is left
alone. (Bindings: tests/functional/test_binding.py.)"""

import logging
import threading

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.conductor import lost_work
from cyborg_like.conductor import workqueue
from cyborg_like.db import api as db_api
from cyborg_like.db import models
from cyborg_like.db import operations

ME = '00000000-0000-4000-8000-00000000c0d1'
OTHER = '00000000-0000-4000-8000-00000000c0d2'


def _operation(state=states.PENDING, type_='program', conductor=ME):
    with db_api.writer() as session:
        operation = operations.add(session, type_, 'target', 'project',
                                   conductor_uuid=conductor)
        operation.state = state
        return operation.uuid


def _state(uuid):
    with db_api.reader() as session:
        return session.scalar(sa.select(models.Operation.state).where(
            models.Operation.uuid == uuid))


class _Jobs:
    """What a WorkQueue answers: the operations its jobs carry."""

    def __init__(self):
        self.carrying = set()

    def carried(self):
        return frozenset(self.carrying)


def test_lost_only_when_carried_by_no_job_twice_running(migrated_db):
    jobs = _Jobs()
    sweep = lost_work.LostWork(
        jobs, lambda: operations.unfinished_of(ME),
        operations.fail_lost).sweep
    lost = _operation()
    handed_over = _operation(state=states.RUNNING)
    carried = _operation(state=states.RUNNING)
    jobs.carrying.add(carried)
    others = _operation(conductor=OTHER)
    playbook = _operation(state=states.RUNNING, type_='driver_install')
    ended = _operation(state=states.SUCCEEDED)
    assert sweep() == []
    # Handed to its job between the sweeps (just after its COMMIT).
    jobs.carrying.add(handed_over)
    assert sweep() == [lost]
    assert operations.get(lost)['detail'] == operations.LOST
    assert {uuid: _state(uuid) for uuid in (
        lost, handed_over, carried, others, playbook, ended)} == {
        lost: 'failed', handed_over: 'running', carried: 'running',
        others: 'pending', playbook: 'running', ended: 'succeeded'}
    # Once its job ended without writing the end: lost in turn.
    jobs.carrying.discard(handed_over)
    assert sweep() == []
    assert sweep() == [handed_over]


def test_jobs_say_what_they_carry_and_a_failed_job_is_logged(caplog):
    queue = workqueue.WorkQueue(2, 10)
    go, done = threading.Event(), threading.Event()

    def job():
        assert go.wait(30)

    def failing():
        try:
            raise RuntimeError('the database went away')
        finally:
            done.set()
    try:
        with queue.reserve(2) as submit:
            running = submit(job, carries='op-1')
            submit(job)
        assert queue.carried() == {'op-1'}
        go.set()
        running.result(timeout=30)
        with caplog.at_level(logging.ERROR), queue.reserve(1) as submit:
            submit(failing, carries='op-2').result(timeout=30)
        assert done.is_set()
        assert queue.carried() == frozenset()
        assert 'the database went away' in caplog.text
    finally:
        go.set()
        queue.shutdown()
