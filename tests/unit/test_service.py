"""Stopping the all-in-one: quiesce everything, then stop in order."""

import threading

from cyborg_like.common import service


class Part:
    def __init__(self, name, calls, quiesces=False):
        self.name, self.calls = name, calls
        if quiesces:
            self.quiesce = lambda: calls.append('quiesce ' + name)

    def start(self):
        self.calls.append('start ' + self.name)

    def stop(self):
        self.calls.append('stop ' + self.name)


def test_agent_loops_stop_before_the_conductor_and_its_server_after():
    calls = []
    conductor, api = Part('conductor', calls), Part('api', calls)
    agent = Part('agent', calls, quiesces=True)
    stop = threading.Event()
    stop.set()
    service.run([conductor, agent, api], stop_event=stop,
                stop_order=[api, conductor, agent])
    assert calls == ['start conductor', 'start agent', 'start api',
                     'quiesce agent',
                     'stop api', 'stop conductor', 'stop agent']


def test_only_started_services_are_stopped():
    calls = []

    class Broken(Part):
        def start(self):
            raise RuntimeError('port in use')

    first, broken = Part('first', calls), Broken('broken', calls)
    try:
        service.run([first, broken], stop_event=threading.Event())
    except RuntimeError:
        pass
    assert calls == ['start first', 'stop first']
