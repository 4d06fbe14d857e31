"""The background loop's thread (common/worker.py): woken early, stopped
at once, whatever it sleeps in."""

import threading
import time

from cyborg_like.common import worker

# Far longer than any test takes: a wait that runs out fails the test.
LONG = 60.0
BOUND = 10.0


def _looping(sleep):
    """A worker whose loop counts rounds, sleeping with ``sleep`` (the
    worker's ``wait`` or ``pause``) between them."""
    rounds = []
    ran = threading.Event()

    def run():
        while not loop.stopping:
            loop.clear()
            rounds.append(time.monotonic())
            ran.set()
            getattr(loop, sleep)(LONG)

    loop = worker.Worker('test-loop', run)
    return loop, rounds, ran


def test_a_wake_ends_the_wait_early():
    loop, rounds, ran = _looping('wait')
    loop.start()
    try:
        assert ran.wait(BOUND)
        ran.clear()
        loop.wake()
        assert ran.wait(BOUND)
        assert len(rounds) == 2
    finally:
        loop.stop()


def test_stop_ends_a_pause_and_a_wait_and_joins():
    for sleep in ('pause', 'wait'):
        loop, _rounds, ran = _looping(sleep)
        loop.start()
        assert ran.wait(BOUND)
        assert loop.alive and loop.started
        started = time.monotonic()
        loop.stop()
        assert time.monotonic() - started < BOUND
        assert not loop.alive and not loop.started


def test_stop_before_start_and_twice_is_harmless():
    loop, rounds, _ran = _looping('wait')
    loop.stop()
    loop.stop()
    assert rounds == [] and not loop.started


def test_a_stopped_worker_starts_again():
    loop, rounds, ran = _looping('wait')
    loop.start()
    assert ran.wait(BOUND)
    loop.stop()
    ran.clear()
    loop.start()
    try:
        assert ran.wait(BOUND)
        assert len(rounds) == 2
    finally:
        loop.stop()


def test_woken_until_cleared():
    loop = worker.Worker('idle', lambda: None)
    assert not loop.woken()
    loop.wake()
    assert loop.woken() and loop.wait(0)
    loop.clear()
    assert not loop.woken() and not loop.wait(0)
