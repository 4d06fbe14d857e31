"""Sampling profiles of the running services with py-spy.

``Profiler.start(pid, name)`` runs ``py-spy record --format raw`` on a
process (with its children, for gunicorn) while a measurement runs; ``stop``
waits for it and summarises the collapsed stacks: where the samples are by
their innermost frame (self time) and by any frame (inclusive), and how the
busy time splits between layers (messaging, database driver, SQLAlchemy,
pecan/webob, JSON, ...).
"""

import collections
import os
import re
import subprocess
import sys

from bench import infra

_LAYERS = (
    ('pymysql', 'DB driver (PyMySQL)'),
    ('psycopg', 'DB driver (psycopg)'),
    ('sqlalchemy', 'SQLAlchemy'),
    ('oslo_db', 'oslo.db'),
    ('amqp/', 'amqp (py-amqp)'),
    ('kombu', 'kombu'),
    ('oslo_messaging', 'oslo.messaging'),
    ('pecan', 'pecan'),
    ('webob', 'WebOb'),
    ('cheroot', 'cheroot'),
    ('gunicorn', 'gunicorn'),
    ('json', 'json'),
    ('jsonschema', 'jsonschema'),
    ('oslo_context', 'oslo.context'),
    ('oslo_log', 'oslo.log'),
    ('logging/', 'logging'),
    ('cyborg_like', 'cyborg_like'),
)


class Profiler:
    def __init__(self, workdir):
        self.workdir = workdir
        self.running = []

    def start(self, pid, name, duration, rate=50):
        infra.ensure_python_tool('py_spy', 'py-spy')
        out = os.path.join(self.workdir, 'profile-%s.txt' % name)
        argv = [os.path.join(infra.BIN, 'py-spy'), 'record', '--pid',
                str(pid), '--duration', str(int(duration)), '--rate',
                str(rate), '--format', 'raw', '--nonblocking',
                '--subprocesses', '-o', out]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        self.running.append((name, out, proc))

    def stop(self, top=15):
        summaries = {}
        for name, out, proc in self.running:
            try:
                _, err = proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            if not os.path.exists(out):
                infra.log('py-spy on %s wrote nothing: %s', name,
                          (err or '').strip()[-500:])
                continue
            summaries[name] = summarise(out, top)
            summaries[name]['file'] = out
        self.running = []
        return summaries


# Innermost frames of threads that wait (py-spy's idle detection does not
# work in this container): a lock, a queue, a selector, a blocking read.
_WAITING = ('Condition.wait', 'Event.wait', 'Queue.get', 'select (',
            'EpollSelector.select', 'PollSelector.select', 'sleep (',
            'TCPTransport._read', 'SocketIO.readinto', 'accept (',
            '_wait_for_tstate_lock', 'Lock.acquire', 'lock.acquire',
            'Semaphore.acquire')

_FRAME = re.compile(r'^(?P<func>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$')


def summarise(path, top=15):
    self_time = collections.Counter()
    inclusive = collections.Counter()
    layers = collections.Counter()
    total = waiting = 0
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            stack, _, count = line.rpartition(' ')
            try:
                count = int(count)
            except ValueError:
                continue
            frames = [_short(f) for f in stack.split(';')]
            frames = [f for f in frames if not f.startswith('process ')
                      and not f.startswith('thread ')]
            if not frames:
                continue
            if frames[-1].startswith(_WAITING) or any(
                    w in frames[-1] for w in _WAITING[:8]):
                waiting += count
                continue
            total += count
            self_time[frames[-1]] += count
            for frame in set(frames):
                inclusive[frame] += count
            layers[_layer(stack.split(';'))] += count
    pct = (lambda n: round(100.0 * n / total, 1)) if total else (
        lambda n: 0.0)
    return {
        'samples': total,
        'waiting_samples': waiting,
        'self': [(f, pct(n)) for f, n in self_time.most_common(top)],
        'inclusive': [(f, pct(n)) for f, n in inclusive.most_common(top * 3)
                      if not f.startswith(('run (threading', '_bootstrap',
                                           '<module>'))][:top],
        'layers': [(layer, pct(n)) for layer, n in layers.most_common()],
    }


def _short(frame):
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group('file')
    for marker in ('site-packages/', 'lib/python3.11/', '/work/main/'):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return '%s (%s)' % (m.group('func'), path)


def _layer(frames):
    """The layer of the innermost frame that belongs to a known layer."""
    for frame in reversed(frames):
        for needle, layer in _LAYERS:
            if needle in frame:
                return layer
    return 'other'


def print_summary(name, summary, stream=sys.stderr):
    stream.write('--- profile of %s: %d busy samples (%d waiting, left '
                 'out)\n' % (name, summary['samples'],
                              summary['waiting_samples']))
    stream.write('  layers (innermost known frame): %s\n' % ', '.join(
        '%s %s%%' % (layer, p) for layer, p in summary['layers'][:10]))
    stream.write('  self:\n')
    for frame, p in summary['self'][:10]:
        stream.write('    %5.1f%%  %s\n' % (p, frame))
    stream.write('  inclusive:\n')
    for frame, p in summary['inclusive'][:12]:
        stream.write('    %5.1f%%  %s\n' % (p, frame))
