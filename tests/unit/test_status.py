"""cyborg-like-status upgrade check, as an operator runs it."""

import os
import subprocess
import sys

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
    assert after.returncode == 0, after.stdout + after.stderr
    assert after.stdout.count('Result: Success') == 3
