"""clirun.in_process, which most CLI tests use: it answers as the console
script does, and leaves this process as it found it. No service: the
commands fail before one would answer, or cannot reach one."""

import locale
import logging
import os
import socket
import sys
import warnings

from cliff import app
import pytest

from tests.clients import clirun
from tests.clients.clirun import CYBORG_LIKE
from tests.clients.clirun import OPENSTACK


@pytest.fixture(scope='module')
def nowhere():
    """The URL of a port nothing listens on."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return 'http://127.0.0.1:%d' % s.getsockname()[1]


def commands(nowhere):
    return [
        # No version discovery document at the endpoint: exit 1.
        [OPENSTACK, '--os-auth-type', 'none', '--os-endpoint', nowhere,
         'accelerator', 'device', 'list'],
        # An API that cannot be reached: exit 1, one line.
        [CYBORG_LIKE, '--os-endpoint', nowhere, 'host', 'list'],
        # argparse's usage error: exit 2, from the command's parser, whose
        # name is the console script's (not the last run's).
        [CYBORG_LIKE, '--os-endpoint', nowhere, 'availability', 'show',
         '--group-by', 'colour'],
    ]


def _state():
    root = logging.getLogger()
    levels = {name: (logger.level, list(logger.handlers), logger.propagate)
              for name, logger in logging.Logger.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    return {'root': (root.level, list(root.handlers)), 'loggers': levels,
            'cliff': (app.App.NAME, app.App.LOG),
            'warnings': list(warnings.filters),
            'locale': locale.setlocale(locale.LC_ALL),
            'environ': dict(os.environ), 'argv': list(sys.argv),
            'streams': (sys.stdin, sys.stdout, sys.stderr)}


def test_in_process_answers_as_the_console_script(nowhere):
    for argv in commands(nowhere):
        inside = clirun.in_process(argv)
        outside = clirun.subprocess_run(argv)
        assert (inside.returncode, inside.stdout, inside.stderr) == (
            outside.returncode, outside.stdout, outside.stderr), argv
        assert inside.returncode in (1, 2), inside


def test_in_process_leaves_the_process_as_it_was(nowhere, monkeypatch):
    # The developer's cloud: a run does not see it ("Cloud ... was not
    # found" otherwise), and it is still there after.
    monkeypatch.setenv('OS_CLOUD', 'developers-own')
    # Once first: the imports of the first runs make loggers.
    for argv in commands(nowhere):
        clirun.in_process(argv)
    before = _state()
    for argv in commands(nowhere):
        clirun.in_process(argv)
        assert _state() == before, argv
    for argv, shown in (
            ([OPENSTACK, '--version'], 'openstack '),
            ([CYBORG_LIKE, '--version'], 'cyborg-like '),
            ([CYBORG_LIKE, '--help'], 'usage: cyborg-like '),
            ([OPENSTACK, '--debug', 'accelerator', 'arq', 'bind', '--help'],
             'usage: openstack accelerator arq bind ')):
        result = clirun.in_process(argv)
        assert _state() == before, argv
        assert result.returncode == 0, (argv, result.stderr)
        assert result.stdout.startswith(shown), (argv, result.stdout)
    unreachable = clirun.in_process(commands(nowhere)[1])
    assert unreachable.stderr.startswith(
        'Cannot reach the accelerator API at %s/v2' % nowhere), unreachable
    assert os.environ['OS_CLOUD'] == 'developers-own'
