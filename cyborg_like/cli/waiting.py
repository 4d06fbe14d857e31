"""Following long work to its end: operations and ARQ bindings.

Progress goes to stderr, so that stdout holds only the final record (and
``-f json`` stays parseable). On a terminal it is one line rewritten in
place (state and elapsed time) with each progress event printed above it;
otherwise a plain line for every change of state and every event.
"""

import sys
import time

from osc_lib import exceptions as osc_exc

from cyborg_like.common import states

POLL_INTERVAL = 0.5
DEFAULT_TIMEOUT = 600


class Display:
    """The progress of one thing being followed, on ``stream``."""

    def __init__(self, what, stream=None):
        self.what = what
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._state = None
        self._width = 0

    def status(self, state, elapsed):
        if self.tty:
            text = '%s: %s (%.0fs)' % (self.what, state, elapsed)
            self._rewrite(text)
        elif state != self._state:
            self._line('%s: %s (%.1fs)' % (self.what, state, elapsed))
        self._state = state

    def event(self, text, elapsed):
        if self.tty and self._width:
            self._rewrite('')
            self.stream.write('\r')
            self._width = 0
        self._line('  [%6.1fs] %s' % (elapsed, text))

    def close(self):
        if self.tty and self._width:
            self.stream.write('\n')
            self.stream.flush()
            self._width = 0

    def _rewrite(self, text):
        self.stream.write('\r' + text + ' ' * max(0, self._width - len(text)))
        self.stream.flush()
        self._width = len(text)

    def _line(self, text):
        self.stream.write(text + '\n')
        self.stream.flush()


def follow(fetch, progress, done, display, timeout=DEFAULT_TIMEOUT,
           interval=POLL_INTERVAL, clock=time.monotonic, sleep=time.sleep):
    """Poll ``fetch()`` until ``done(item)``; the last item.

    ``progress(item)`` gives (state text, events so far); each event is
    shown once. Raises CommandError when ``timeout`` seconds (0: none)
    pass first.
    """
    start = clock()
    shown = 0
    try:
        while True:
            item = fetch()
            elapsed = clock() - start
            state, events = progress(item)
            for event in events[shown:]:
                display.event(event, elapsed)
            shown = max(shown, len(events))
            display.status(state, elapsed)
            if done(item):
                return item
            if timeout and elapsed >= timeout:
                raise osc_exc.CommandError(
                    '%s is still %s after %ds; it goes on in the service '
                    '(stopped following it)' % (display.what, state,
                                                timeout))
            sleep(interval)
    finally:
        display.close()


# -- operations

def operation_progress(operation):
    """State text and event texts of an operation; the events and a
    percentage are shown when the operation carries them."""
    state = operation['state']
    percent = operation.get('progress')
    if isinstance(percent, (int, float)):
        state = '%s %d%%' % (state, percent)
    events = [_event_text(e) for e in operation.get('events') or ()]
    return state, events


def _event_text(event):
    if not isinstance(event, dict):
        return str(event)
    text = (event.get('message') or event.get('detail')
            or event.get('event') or '')
    percent = event.get('progress')
    if isinstance(percent, (int, float)):
        text = '%d%% %s' % (percent, text)
    return text.strip() or str(event)


def operation_done(operation):
    # Cancelled ends a driver operation too (common/states.py).
    return operation['state'] in states.OPERATION.terminal


def operation_failure(operation):
    """The one-line reason an ended operation failed, or None."""
    if operation['state'] != states.FAILED:
        return None
    return 'Operation %s (%s) failed: %s' % (
        operation['uuid'], operation.get('type'),
        operation.get('detail') or 'no reason given')


def follow_operation(api, uuid, timeout=DEFAULT_TIMEOUT, stream=None):
    display = Display('operation %s' % uuid, stream)
    return follow(lambda: api.get('/operations/%s' % uuid),
                  operation_progress, operation_done, display, timeout)


# -- accelerator requests

def follow_arq(api, uuid, wanted, timeout=DEFAULT_TIMEOUT, stream=None):
    """Follow an ARQ until its state is one of ``wanted``."""
    display = Display('ARQ %s' % uuid, stream)
    return follow(lambda: api.get('/accelerator_requests/%s' % uuid),
                  lambda arq: (arq['state'], []),
                  lambda arq: arq['state'] in wanted, display, timeout)


def add_wait(parser, what):
    parser.add_argument(
        '--wait', action='store_true',
        help='Follow %s until it ends, showing its progress on stderr; '
             'exit 1 with the reason if it fails' % what)
    parser.add_argument(
        '--timeout', type=int, default=DEFAULT_TIMEOUT, metavar='<seconds>',
        help='With --wait: give up following after <seconds> (0: never; '
             'default: %d); the work goes on in the service'
             % DEFAULT_TIMEOUT)
    return parser


class FailAfterOutput:
    """For commands that show a record and then exit 1 because it tells of
    a failure (the record is printed first, the reason last, on stderr)."""

    failure = None

    def operation_result(self, operation, args):
        """``operation`` as the command shows it: with --wait, followed to
        its end first (a failed one then makes the command exit 1)."""
        if args.wait:
            operation = follow_operation(self.api, operation['uuid'],
                                         args.timeout)
            self.failure = operation_failure(operation)
        return operation

    def run(self, parsed_args):
        result = super().run(parsed_args)
        if self.failure:
            raise osc_exc.CommandError(self.failure)
        return result
