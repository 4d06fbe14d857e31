"""The API and agent processes never load the database layer."""

import subprocess
import sys

import pytest

# Not sqlalchemy itself: pecan's JSON renderer imports it when present.
FORBIDDEN = ('oslo_db', 'alembic')


@pytest.mark.parametrize('entry', ['cyborg_like.cmd.api',
                                   'cyborg_like.cmd.agent',
                                   'cyborg_like.api.app',
                                   'cyborg_like.agent.service'])
def test_process_does_not_import_the_database(entry):
    code = ('import sys, %s\n'
            'bad = sorted(m for m in sys.modules if m.split(".")[0] in %r '
            'or m.startswith("cyborg_like.db"))\n'
            'print(",".join(bad))' % (entry, FORBIDDEN))
    out = subprocess.run([sys.executable, '-c', code], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == '', 'loaded: %s' % out
