"""common/periodic.py: each task runs at once on start, and a caller can
tell when every first run ended (tests wait for it: CI run 19)."""

import threading

from cyborg_like.common import periodic
from harness.infra import wait_for


def test_ran_each_once_waits_for_every_first_run_to_end():
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(10)

    tasks = periodic.Periodic('test', [(3600, slow), (3600, lambda: None)])
    assert not tasks.ran_each_once()            # not started
    tasks.start()
    try:
        assert started.wait(10)
        assert not tasks.ran_each_once()        # the slow one still runs
        release.set()
        assert wait_for(tasks.ran_each_once, timeout=10)
    finally:
        release.set()
        tasks.stop()
