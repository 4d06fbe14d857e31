"""The progress display of ``--wait`` and ``operation watch``
(cyborg_like/cli/waiting.py), given the records a service would return:
on a terminal and not, with progress events, failures and time-outs."""

import io

import pytest
from osc_lib import exceptions as osc_exc

from cyborg_like.cli import waiting


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    """Time that moves only when the code under test sleeps."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def operation(state, events=None, **fields):
    op = {'uuid': 'op-1', 'type': 'program', 'state': state,
          'detail': None}
    if events is not None:
        op['events'] = events
    op.update(fields)
    return op


def follow(records, stream, timeout=waiting.DEFAULT_TIMEOUT):
    records = iter(records)
    clock = Clock()
    display = waiting.Display('operation op-1', stream)
    return waiting.follow(lambda: next(records), waiting.operation_progress,
                          waiting.operation_done, display, timeout,
                          interval=1.0, clock=clock, sleep=clock.sleep)


def test_plain_lines_for_each_state_and_event():
    stream = io.StringIO()
    last = follow([operation('pending'), operation('pending'),
                   operation('running', [{'message': 'erasing'}]),
                   operation('running', [{'message': 'erasing'},
                                         {'message': 'writing',
                                          'progress': 40}]),
                   operation('succeeded', [{'message': 'erasing'},
                                           {'message': 'writing',
                                            'progress': 40}])], stream)
    assert last['state'] == 'succeeded'
    assert stream.getvalue().splitlines() == [
        'operation op-1: pending (0.0s)',
        '  [   2.0s] erasing',
        'operation op-1: running (2.0s)',
        '  [   3.0s] 40% writing',
        'operation op-1: succeeded (4.0s)',
    ]


def test_terminal_rewrites_the_state_line_and_prints_events_above():
    stream = Terminal()
    follow([operation('running', progress=10),
            operation('running', ['flashing'], progress=50),
            operation('succeeded', ['flashing'])], stream)
    first = 'operation op-1: running 10% (0s)'
    second = 'operation op-1: running 50% (1s)'
    last = 'operation op-1: succeeded (2s)'
    assert stream.getvalue() == (
        '\r' + first
        # The event clears the state line, takes a line of its own...
        + '\r' + ' ' * len(first) + '\r  [   1.0s] flashing\n'
        # ... and the state line comes back below it, rewritten in place.
        + '\r' + second
        + '\r' + last + ' ' * (len(second) - len(last)) + '\n')


def test_failure_reason():
    failed = operation('failed', detail='PR interface id mismatch')
    assert waiting.operation_failure(failed) == (
        'Operation op-1 (program) failed: PR interface id mismatch')
    assert waiting.operation_failure(operation('succeeded')) is None


def test_timeout_stops_following_with_the_state():
    stream = io.StringIO()
    with pytest.raises(osc_exc.CommandError) as error:
        follow([operation('running')] * 10, stream, timeout=3)
    assert str(error.value) == (
        'operation op-1 is still running after 3s; it goes on in the '
        'service (stopped following it)')
    assert stream.getvalue().splitlines() == [
        'operation op-1: running (0.0s)']
