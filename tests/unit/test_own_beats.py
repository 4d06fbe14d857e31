"""A conductor judges others' liveness only once its own heartbeats have
been written without a gap for the grace period (conductor/own_beats.py):
after a database outage every conductor and host looks down."""

import pytest

from cyborg_like.conductor import own_beats


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _down():
    raise ConnectionError('the database is away')


@pytest.fixture
def beats():
    clock = Clock()
    found = own_beats.OwnBeats(down_after=3, grace=4, clock=clock)
    found.clock = clock
    return found


def test_a_process_that_starts_beating_judges_at_once(beats):
    beats.beat(lambda: None)
    assert beats.may_judge()


def test_a_failed_beat_stops_judging_until_the_grace_passed(beats):
    beats.beat(lambda: None)
    with pytest.raises(ConnectionError):
        beats.beat(_down)
    assert not beats.may_judge()
    beats.clock.now += 30
    beats.beat(lambda: None)            # the database is back
    assert not beats.may_judge()
    for _ in range(4):
        beats.clock.now += 1
        beats.beat(lambda: None)
    assert beats.may_judge()


def test_a_gap_between_beats_counts_as_an_outage(beats):
    # The periodic could not even try (a thread stuck on the database).
    beats.beat(lambda: None)
    beats.clock.now += 10
    beats.beat(lambda: None)
    assert not beats.may_judge()
    for _ in range(4):
        beats.clock.now += 1
        beats.beat(lambda: None)
    assert beats.may_judge()
