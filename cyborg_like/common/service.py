"""Running services until a signal says stop.

Every console script builds one or more objects with ``start()`` and
``stop()`` and hands them to ``run``; SIGTERM and SIGINT (Ctrl-C) stop them
in reverse order, or in ``stop_order``, so the all-in-one shuts its three
parts down cleanly.
"""

import signal
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def run(services, stop_event=None, stop_order=None):
    stop_event = stop_event or threading.Event()

    def _on_signal(signum, frame):
        LOG.info('Received %s, stopping', signal.Signals(signum).name)
        stop_event.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    started = []
    try:
        for service in services:
            service.start()
            started.append(service)
        # A timeout keeps the main thread responsive to signals.
        while not stop_event.wait(1.0):
            pass
    finally:
        order = [s for s in stop_order or reversed(services) if s in started]
        # First every service stops starting new work (the agent's loops
        # call the conductor), then each stops in turn.
        for service in order:
            getattr(service, 'quiesce', lambda: None)()
        for service in order:
            try:
                service.stop()
            except Exception:
                LOG.exception('Error while stopping %s', service)
    LOG.info('Stopped')
