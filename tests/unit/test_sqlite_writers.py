"""SQLite writers wait for each other (db/api.py begins them IMMEDIATE)."""

import threading

import sqlalchemy as sa

from cyborg_like.db import api as db_api
from cyborg_like.db import models


def _read_then_write(hostname, errors, has_read=None, other_read=None):
    try:
        with db_api.writer() as session:
            session.scalars(sa.select(models.Host)).all()
            if has_read is not None:
                has_read.set()
            if other_read is not None:
                # The other writer reads meanwhile, if it can.
                other_read.wait(timeout=0.5)
            session.add(models.Host(hostname=hostname))
    except Exception as error:
        errors.append(error)


def test_read_then_write_transactions_wait_instead_of_failing(migrated_db):
    # Deferred, both would read, then the second to write would fail at
    # once with "database is locked"; IMMEDIATE, the second waits for the
    # first to commit before it reads.
    first_read, second_read = threading.Event(), threading.Event()
    errors = []
    first = threading.Thread(target=_read_then_write, args=(
        'host-0', errors, first_read, second_read))
    second = threading.Thread(target=lambda: (
        first_read.wait(), _read_then_write('host-1', errors, second_read)))
    first.start()
    second.start()
    first.join()
    second.join()
    assert errors == []
    with db_api.reader() as session:
        assert sorted(session.scalars(sa.select(models.Host.hostname))) == [
            'host-0', 'host-1']
