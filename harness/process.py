"""One program of a cloud run as its own OS process, logging to a file.

Each process is the leader of its own session, so a stop or a kill reaches
what it started too (gunicorn's workers, the agent under umockdev-wrapper).
It is ready when its log, from the offset at which it was started, holds
its ready line: a restart waits for the new line, not the old one.
"""

import contextlib
import os
import signal
import subprocess
import time

from harness.infra import HarnessError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
LOG_TAIL_LINES = 150


def service_environment(extra=None):
    """The environment of a service: ours without ``OS_*`` variables
    (oslo.config reads ``OS_<GROUP>__<OPTION>``, and keystoneauth the
    caller's credentials; the cloud is what its files say), plus
    ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(extra or {})
    return env


class Service:
    """A process started from ``argv``; ready once ``ready_line`` is
    logged."""

    def __init__(self, name, argv, log_path, ready_line, env=None,
                 cwd=ROOT):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.ready_line = ready_line
        # Extra environment variables of the process.
        self.env = env
        self.cwd = cwd
        self.proc = None
        self._log = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout=START_TIMEOUT):
        if self.running:
            raise HarnessError('%s is already running' % self.name)
        if os.path.isabs(self.argv[0]) and not os.path.exists(self.argv[0]):
            raise HarnessError('%s is missing: run with the virtualenv made '
                               'by tools/setup-venv.sh' % self.argv[0])
        offset = self.log_size()
        self._log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen(
            self.argv, stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            env=service_environment(self.env), cwd=self.cwd)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise HarnessError('%s exited with %s while starting:\n%s'
                                   % (self.name, self.proc.returncode,
                                      self.tail()))
            if self.ready_line in self.read_log(offset):
                return self
            time.sleep(0.1)
        raise HarnessError('%s did not log %r within %.0fs:\n%s' % (
            self.name, self.ready_line, timeout, self.tail()))

    def _signal(self, signum):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signum)

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, then SIGKILL if it is still there after ``timeout``.

        Returns the exit code, or None if it had to be killed.
        """
        if self.proc is None:
            return None
        code = None
        try:
            if self.proc.poll() is None:
                self._signal(signal.SIGTERM)
                try:
                    code = self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    self.proc.wait(10)
            else:
                code = self.proc.returncode
        finally:
            self.proc = None
            if self._log is not None:
                self._log.close()
                self._log = None
        return code

    def kill(self):
        """SIGKILL, as a crash or an OOM kill would end it."""
        if self.running:
            self._signal(signal.SIGKILL)
            self.proc.wait(10)
        self.stop()

    def restart(self, timeout=START_TIMEOUT):
        self.stop()
        return self.start(timeout)

    def log_size(self):
        """Where the log ends now: an offset for ``read_log``."""
        try:
            return os.path.getsize(self.log_path)
        except FileNotFoundError:
            return 0

    def read_log(self, offset=0):
        try:
            with open(self.log_path, 'rb') as f:
                f.seek(offset)
                return f.read().decode('utf-8', 'replace')
        except FileNotFoundError:
            return ''

    def tail(self, lines=LOG_TAIL_LINES):
        return '\n'.join(self.read_log().splitlines()[-lines:])

    def pids(self):
        """The process and its children (gunicorn workers)."""
        if not self.running:
            return []
        return [self.proc.pid] + children(self.proc.pid)


def children(pid):
    found = []
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            kids = [int(p) for p in f.read().split()]
    except OSError:
        return found
    for kid in kids:
        found.append(kid)
        found.extend(children(kid))
    return found
