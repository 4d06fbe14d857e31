"""Usage records on MariaDB and PostgreSQL (SQLite: the functional
tests): bindings opened and closed by the real ARQ state changes, with an
injected clock at sub-second times across a period boundary, summed in
SQL to the millisecond (db/usage.py's per-dialect epoch), and pruned
without the counter going down."""

import datetime

import pytest

from cyborg_like.common import states
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import arqs
from cyborg_like.db import usage
from tests.unit import test_usage_migration

pytestmark = pytest.mark.integration

EDGE = datetime.datetime(2026, 6, 1)
INSTANCES = ('1ea5e000-0000-4000-8000-00000000000a',
             '1ea5e000-0000-4000-8000-00000000000b')
KEY = ('p1', 'FPGA', 'PAC N3000')


class Clock:
    def __init__(self):
        self.now = EDGE

    def __call__(self):
        return self.now

    def at(self, seconds):
        self.now = EDGE + datetime.timedelta(seconds=seconds)


@pytest.fixture
def clock():
    clock = Clock()
    usage.set_clock(clock)
    try:
        yield clock
    finally:
        usage.set_clock()


def _by(summary, key='project_id'):
    return {row[key]: row['device_seconds'] for row in summary['usage']}


def test_bindings_are_counted_to_the_millisecond(world, clock):
    """a: bound at EDGE-1.750 s, unbound at EDGE+1.750 s;
    b: bound at EDGE-1.250 s, deleted while Bound at EDGE+2.500 s."""
    a, b = world.new_arq(), world.new_arq()
    clock.at(-1.75)
    assert world.bind(a, INSTANCES[0]) == states.FINISH
    clock.at(-1.25)
    assert world.bind(b, INSTANCES[1]) == states.FINISH
    clock.at(1.75)
    arqs.unbind([a])
    clock.at(2.5)
    arqs.delete([b], delete_bound=True)
    clock.at(10)

    day = datetime.timedelta(days=1)
    assert _by(usage.summarize(EDGE - day, EDGE)) == {'p1': 3.0}
    assert _by(usage.summarize(EDGE, EDGE + day)) == {'p1': 4.25}
    assert _by(usage.summarize(EDGE - day, group_by=['instance']),
               'instance_uuid') == {INSTANCES[0]: 3.5, INSTANCES[1]: 3.75}
    # An edge inside a binding, to the millisecond.
    inside = EDGE + datetime.timedelta(milliseconds=1001)
    assert _by(usage.summarize(inside, EDGE + day)) == {'p1': 0.749 + 1.499}
    assert usage.counter_totals() == {KEY: 7.25}

    # Two days on, a one-day retention forgets both; the counter keeps
    # what they counted, and a second prune finds nothing.
    clock.at(2 * 86400)
    assert usage.prune(1) == 2
    assert usage.prune(1) == 0
    assert usage.counter_totals() == {KEY: 7.25}
    assert usage.summarize(EDGE - day)['usage'] == []


def test_a_binding_held_at_the_upgrade_counts_from_it(empty_database,
                                                        tmp_path):
    """Migration 0025's data step, on each backend (SQLite: tests/unit)."""
    _backend, url = empty_database
    CONF.set_override('connection', url, group='database')
    db_api.dispose()
    try:
        test_usage_migration.test_a_binding_held_at_the_upgrade_counts_from_it(
            url, tmp_path)
    finally:
        db_api.dispose()
        CONF.clear_override('connection', group='database')
