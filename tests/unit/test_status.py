"""cyborg-like-status upgrade check, as an operator runs it."""

import datetime
import os
import subprocess
import sys

import sqlalchemy as sa

BIN = os.path.dirname(sys.executable)


def _run(*args):
    return subprocess.run([os.path.join(BIN, args[0])] + list(args[1:]),
                          capture_output=True, text=True)


def test_upgrade_check_fails_until_the_schema_is_current(tmp_path):
    conf = tmp_path / 'cyborg_like.conf'
    conf.write_text('[database]\nconnection = sqlite:///%s\n'
                    % (tmp_path / 'db.sqlite'))
    before = _run('cyborg-like-status', '--config-file', str(conf),
                  'upgrade', 'check')
    assert before.returncode == 2, before.stdout + before.stderr
    assert 'cyborg-like-dbsync upgrade' in before.stdout

    assert _run('cyborg-like-dbsync', '--config-file', str(conf),
                'upgrade').returncode == 0
    after = _run('cyborg-like-status', '--config-file', str(conf),
                 'upgrade', 'check')
    # No conductor has run against this database yet: a warning (1).
    assert after.returncode == 1, after.stdout + after.stderr
    assert 'No conductor is heartbeating' in after.stdout
    assert after.stdout.count('Result: Success') == 3


def test_upgrade_check_reports_conductors_that_stopped_heartbeating(
        tmp_path):
    conf = tmp_path / 'cyborg_like.conf'
    url = 'sqlite:///%s' % (tmp_path / 'db.sqlite')
    # The live conductor stays up however long the check takes to start
    # on a busy machine.
    conf.write_text('[database]\nconnection = %s\n[conductor]\n'
                    'service_down_after = 3600\n' % url)
    assert _run('cyborg-like-dbsync', '--config-file', str(conf),
                'upgrade').returncode == 0
    engine = sa.create_engine(url)
    insert = sa.text('INSERT INTO conductors (uuid, hostname, '
                     'last_heartbeat, created_at) VALUES '
                     "(:uuid, 'ctl-1', :seen, datetime('now'))")
    with engine.begin() as conn:
        conn.execute(insert, {'uuid': 'c-alive', 'seen': str(
            datetime.datetime.utcnow().replace(microsecond=0))})
        conn.execute(insert, {'uuid': 'c-dead',
                              'seen': '2000-01-01 00:00:00'})
    engine.dispose()
    result = _run('cyborg-like-status', '--config-file', str(conf),
                  'upgrade', 'check')
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Conductors not heartbeating' in result.stdout
    assert 'c-dead' in result.stdout and 'c-alive' not in result.stdout
