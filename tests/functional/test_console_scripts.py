"""The console scripts as an operator runs them: their --help, the
one-line errors of a missing database, and the config files they find
without --config-file. Each runs as a subprocess of the virtualenv's own
entry point, from an empty directory with an empty HOME."""

import os
import subprocess
import sys

import pytest

BIN = os.path.dirname(sys.executable)
# What each --help must say beyond the common parts: its description and
# the options that matter, with their defaults.
HELP = {
    'api': ('The accelerator API (OpenStack Cyborg v2)', '[api] port = 6666',
            '[api] auth_strategy = keystone'),
    'conductor': ('The conductor:', '[database] connection',
                  '[conductor] workers = 8'),
    'agent': ('The agent of one compute host',
              '[agent] enabled_drivers = fake'),
    # The all-in-one's own defaults, not the services'.
    'all-in-one': ('API, conductor and agent in one process',
                   '[DEFAULT] transport_url = inproc:/',
                   '[api] auth_strategy = noauth'),
    'dbsync': ('Create or upgrade the database schema',
               '[database] connection'),
    'status': ('ready for an upgrade', '[database] connection'),
}


@pytest.fixture
def home(tmp_path):
    (tmp_path / 'home').mkdir()
    return tmp_path / 'home'


def _run(command, home, *args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('OS_', 'CYBORG_LIKE'))}
    env['HOME'] = str(home)
    return subprocess.run([os.path.join(BIN, command)] + list(args),
                          capture_output=True, text=True, timeout=120,
                          cwd=str(home), env=env)


@pytest.mark.parametrize('service', sorted(HELP))
def test_help_says_what_the_command_is_and_where_config_comes_from(
        service, home):
    done = _run('cyborg-like-%s' % service, home, '--help')
    assert done.returncode == 0, done.stderr
    out = ' '.join(done.stdout.split())
    assert 'usage: cyborg-like-%s' % service in out
    for expected in HELP[service]:
        assert expected in out
    assert '/etc/cyborg_like/' in out
    assert 'share/cyborg_like/cyborg_like.conf.sample' in out
    # No library warning on every command (eventlet's deprecation).
    assert done.stderr == ''


@pytest.mark.parametrize('argv,code', [
    (('cyborg-like-dbsync', 'upgrade'), 1),
    (('cyborg-like-dbsync', 'version'), 1),
    (('cyborg-like-conductor',), 1),
    (('cyborg-like-status', 'upgrade', 'check'), 255),
])
def test_no_database_is_one_line_not_a_traceback(argv, code, home):
    done = _run(argv[0], home, *argv[1:])
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stdout == ''
    assert done.stderr.splitlines() == [
        '%s: no database: set [database] connection in '
        '/etc/cyborg_like/cyborg_like.conf or a file given with '
        '--config-file (config files read: none found)' % argv[0]]


def test_config_file_found_where_oslo_config_looks(home):
    """No --config-file: ~/.cyborg_like/cyborg_like.conf is read, as
    /etc/cyborg_like/cyborg_like.conf would be (same search)."""
    (home / '.cyborg_like').mkdir()
    conf = home / '.cyborg_like' / 'cyborg_like.conf'
    conf.write_text('[database]\nconnection = sqlite:///%s\n'
                    % (home / 'db.sqlite'))
    done = _run('cyborg-like-dbsync', home, 'upgrade')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('Database is at revision ')
    assert (home / 'db.sqlite').exists()
    done = _run('cyborg-like-status', home, 'upgrade', 'check')
    # The schema is at head; no conductor has heartbeated (a warning).
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'No conductor is heartbeating' in done.stdout


def test_version(home):
    done = _run('cyborg-like-api', home, '--version')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().split('.')[:2] == ['0', '0']
