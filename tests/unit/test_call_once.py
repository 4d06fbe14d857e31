"""A call's writes are logged under its ``call_id``, once: a second
delivery of the call that gets past the look-up (both deliveries at
once, on two conductors) has its first write refused by the unique key
and rolled back whole (db/change_recorder.py); calls without an id (the
agents', the services' own) are logged as before."""

import time

import pytest
import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.db import api as db_api
from cyborg_like.db import models

CALL = '00000000-0000-4000-8000-0000000ca11d'


def _add_host(name, call_id):
    ctxt = context.RequestContext(deadline=time.time() + 30,
                                  call_id=call_id)
    with deadlines.serving(ctxt, 'set_host_labels'):
        with db_api.writer() as session:
            session.add(models.Host(hostname=name))


def _rows():
    with db_api.reader() as session:
        hosts = session.scalars(sa.select(models.Host.hostname)).all()
        calls = session.scalars(sa.select(models.Change.call_id)).all()
    return sorted(hosts), calls


def test_a_second_delivery_writes_nothing(migrated_db):
    _add_host('first', CALL)
    with pytest.raises(exception.CallDoneBefore):
        _add_host('again', CALL)
    assert _rows() == (['first'], [CALL])


def test_calls_without_an_id_are_logged_each(migrated_db):
    _add_host('h1', None)
    _add_host('h2', None)
    assert _rows() == (['h1', 'h2'], [None, None])
