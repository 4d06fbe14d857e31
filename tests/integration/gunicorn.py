"""A real OpenStack peer (Keystone, Glance) served by gunicorn for the
integration tests: started in its own session, ready once a URL answers
200, stopped with SIGINT (SIGKILL after a while), its logs tailed into
the report of a failed test."""

import contextlib
import os
import signal
import subprocess
import time

import pytest
import requests

from . import infra

STOP_TIMEOUT = 15.0


class GunicornPeer:
    """Base of a peer: subclasses set ``workdir``, ``port``, ``log_path``
    (the service's own log) and ``server_log_path`` (gunicorn's), and
    call ``_serve``."""

    #: The exception a failed start raises (a subclass of Exception).
    error = RuntimeError
    proc = None
    _log = None

    def _serve(self, app, env, ready_url, start_timeout):
        """Run ``app`` (module:callable in ``workdir``) and wait until
        ``ready_url`` answers 200."""
        gunicorn = os.path.join(infra.BIN, 'gunicorn')
        if not os.path.exists(gunicorn):
            pytest.fail('%s is missing: run the tests with the virtualenv '
                        'made by tools/setup-venv.sh' % gunicorn,
                        pytrace=False)
        self._log = open(self.server_log_path, 'ab')
        self.proc = subprocess.Popen(
            [gunicorn, '--workers', '1', '--threads', '4',
             '--no-control-socket', '--chdir', self.workdir,
             '--bind', '127.0.0.1:%d' % self.port, app],
            stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=dict(os.environ, **env),
            start_new_session=True)
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise self.error('gunicorn exited with %s:\n%s' % (
                    self.proc.returncode, self.tail()))
            try:
                # gunicorn accepts connections seconds before its worker
                # has loaded the service: a time-out only means "not yet".
                if requests.get(ready_url, timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise self.error('%s did not answer on %s within %.0fs:\n%s' % (
            type(self).__name__, ready_url, start_timeout, self.tail()))

    def stop(self):
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGINT)
                try:
                    self.proc.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(10)
        finally:
            self.proc = None
            if self._log is not None:
                self._log.close()
                self._log = None

    def tail(self, lines=infra.LOG_TAIL_LINES):
        text = []
        for path in (self.server_log_path, self.log_path):
            with contextlib.suppress(FileNotFoundError):
                with open(path, 'rb') as f:
                    text.append('--- %s\n%s' % (path, '\n'.join(
                        f.read().decode('utf-8', 'replace')
                        .splitlines()[-lines:])))
        return '\n'.join(text)
