"""Running the command line clients of the client tests.

Most runs are in this process (``in_process``): the console script's
``main`` (cliff's ``App.run``) with stdin, stdout and stderr replaced,
``sys.argv`` set and no ``OS_*`` variables, which spares a Python start-up
and the imports of osc-lib, openstacksdk and the plugins (a second or two
a run). The global state that cliff and osc-lib change is put back after
every run: the root logger's level and handlers (osc-lib adds a console
handler each run) and the other loggers' levels, the warning filters
(a run starts with Python's defaults, as a process does),
the locale (cliff calls ``setlocale(LC_ALL, '')``), the environment,
``sys.argv`` and the name cliff gives the app, and openstackclient's
cached clients; the run's keystoneauth session is closed.

A few smoke tests still run the console scripts (``subprocess_run``): what
only a real process shows (its entry point, a terminal, everything a run
writes to its stderr).

Both give a ``subprocess.CompletedProcess`` (``returncode``, ``stdout``,
``stderr`` as text).
"""

import contextlib
import io
import locale
import logging
import os
import subprocess
import sys
import traceback
import warnings

import pytest

BIN = os.path.dirname(sys.executable)
CYBORG_LIKE = os.path.join(BIN, 'cyborg-like')
OPENSTACK = os.path.join(BIN, 'openstack')
TIMEOUT = 120


def clean_env():
    """The developer's cloud settings must not leak in."""
    return {k: v for k, v in os.environ.items() if not k.startswith('OS_')}


def subprocess_run(argv, env=None):
    """``argv`` (a console script first) in a subprocess."""
    if not os.path.exists(argv[0]):
        pytest.fail('%s is missing: install cyborg_like and the test '
                    'requirements in the virtualenv (tools/setup-venv.sh)'
                    % argv[0])
    return subprocess.run(argv, capture_output=True, text=True,
                          env=dict(clean_env(), **(env or {})),
                          timeout=TIMEOUT, check=False,
                          stdin=subprocess.DEVNULL)


def _cyborg_like_app():
    from cyborg_like.cli import shell
    return shell.Shell()


def _openstack_app():
    from openstackclient import shell
    return shell.OpenStackShell()


def _forget_clients():
    """openstackclient keeps each plugin's client in a ClientCache on
    osc-lib's ClientManager class (which cyborg-like's inherits): the first
    run's client, with its session, endpoint and microversion, would serve
    every later run. A new process has none."""
    from osc_lib import clientmanager
    classes = [clientmanager.ClientManager]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        for cache in vars(cls).values():
            if isinstance(cache, clientmanager.ClientCache):
                cache._handle = None


# The app of each console script, as its main() makes it.
APPS = {CYBORG_LIKE: _cyborg_like_app, OPENSTACK: _openstack_app}


class _LoggingState:
    """The loggers' levels, handlers, propagation; put back by restore().

    The root logger's handlers are set aside until then, as a new process
    has none: pytest's and oslo.log's (register_options adds a stderr
    handler), which would print the run's log records (osc-lib makes the
    root logger's level DEBUG) to the test's own output.
    """

    def __init__(self):
        self.root = logging.getLogger()
        self.loggers = [self._of(self.root)]
        for logger in list(logging.Logger.manager.loggerDict.values()):
            if isinstance(logger, logging.Logger):
                self.loggers.append(self._of(logger))
        for handler in list(self.root.handlers):
            self.root.removeHandler(handler)

    @staticmethod
    def _of(logger):
        return (logger, logger.level, list(logger.handlers),
                logger.propagate, logger.disabled)

    def restore(self):
        for logger, level, handlers, propagate, disabled in self.loggers:
            for handler in list(logger.handlers):
                if handler not in handlers and (
                        logger is self.root
                        or not isinstance(handler, logging.NullHandler)):
                    # osc-lib's console handler, and any of the run's.
                    logger.removeHandler(handler)
                    handler.close()
            if logger is self.root:
                for handler in handlers:
                    logger.addHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
            logger.disabled = disabled


def _exit_code(code):
    """The exit status of ``sys.exit(code)``, as Python makes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write('%s\n' % (code,))
    return 1


def _close_session(app):
    session = getattr(getattr(app, 'client_manager', None), 'session', None)
    close = getattr(session, 'close', None)
    if close is not None:
        close()


def _set_environ(wanted):
    for name in set(os.environ) - set(wanted):
        del os.environ[name]
    for name, value in wanted.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@contextlib.contextmanager
def _isolated(argv, env):
    """The process-wide state of one run, put back after it."""
    from cliff import app
    saved_environ = dict(os.environ)
    saved_argv, saved_stdin = sys.argv, sys.stdin
    # cliff names its app (subcommands' usage, --version) after
    # sys.argv[0] when it is first imported: here, after the first run's.
    saved_name = app.App.NAME, app.App.LOG
    saved_locale = locale.setlocale(locale.LC_ALL)
    saved_logging = _LoggingState()
    try:
        with warnings.catch_warnings():
            _set_environ(dict(clean_env(), **(env or {})))
            sys.argv = list(argv)
            app.App.NAME = os.path.splitext(os.path.basename(argv[0]))[0]
            app.App.LOG = logging.getLogger(app.App.NAME)
            sys.stdin = io.StringIO('')     # subprocess.DEVNULL's
            # A new process's warning filters (Python's defaults), not
            # pytest's.
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning,
                             ImportWarning, ResourceWarning):
                warnings.simplefilter('ignore', category)
            yield
    finally:
        saved_logging.restore()
        locale.setlocale(locale.LC_ALL, saved_locale)
        sys.argv, sys.stdin = saved_argv, saved_stdin
        app.App.NAME, app.App.LOG = saved_name
        _set_environ(saved_environ)


def in_process(argv, env=None):
    """``argv`` (CYBORG_LIKE or OPENSTACK first) run by its app here: the
    exit status the console script would have, and its output."""
    make_app = APPS[argv[0]]
    # Text in, not a terminal: a pipe's end, as subprocess_run gives.
    stdout, stderr = io.StringIO(), io.StringIO()
    with _isolated(argv, env), contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        app = None
        try:
            _forget_clients()
            app = make_app()
            # The console script: sys.exit(main()).
            returncode = _exit_code(app.run(list(argv[1:])))
        except SystemExit as exit:    # argparse's errors, --help
            returncode = _exit_code(exit.code)
        except Exception:
            # What Python does with an exception nothing caught.
            traceback.print_exc()
            returncode = 1
        finally:
            if app is not None:
                _close_session(app)
            _forget_clients()
    return subprocess.CompletedProcess(argv, returncode, stdout.getvalue(),
                                       stderr.getvalue())
