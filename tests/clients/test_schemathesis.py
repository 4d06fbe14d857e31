"""schemathesis against a real cyborg-like-all-in-one, from the document it
serves at /openapi.json.

Bounded: a fixed seed, MAX_EXAMPLES generated cases per operation in the
fuzzing phase after the examples and coverage phases (every operation, every
declared parameter and status, negative values, methods a path does not
declare), then stateful sequences along the links schemathesis infers;
one worker: with two, its threads now and then crash in CPython 3.11's AST
recursion check ("SystemError: AST constructor recursion depth mismatch",
not thread-safe in 3.11). About three and a half minutes on two cores
beside the other tests. (Phases split over several schemathesis processes
against one all-in-one ran past the timeout under CI's load: the coverage
phase stalled behind the fuzzing one.)

Must hold with 0 failures: no 5xx (not_a_server_error) and no error in the
all-in-one's log, every answer as the document declares it (status codes,
content types, headers, bodies), 405 with the declared methods in Allow for
every undeclared method, schema-valid requests accepted (with the
allowances of schemathesis.toml beside this file, each with its reason).

Not checked: negative_data_rejection (the API takes, as OpenStack services
do, OpenStack-API-Version values the document does not list, e.g. other
services' versions beside ours, and ignores headers it does not know) and
ignored_auth (the all-in-one runs with noauth).
"""

import os
import subprocess
import sys

import pytest

CONFIG = os.path.join(os.path.dirname(__file__), 'schemathesis.toml')
MAX_EXAMPLES = 25
SEED = 20261123
# A ceiling: about 210 s beside the other tests on a quiet machine (162 s
# alone); past 840 s in a CI run at load 15 on 2 cores (docs/testing.md,
# run 26), where the integration suite took 1.7 times its usual time.
RUN_TIMEOUT = 1500
CHECKS_OFF = ('negative_data_rejection', 'ignored_auth')


def _st():
    script = os.path.join(os.path.dirname(sys.executable), 'st')
    return [script] if os.path.exists(script) else [
        sys.executable, '-m', 'schemathesis.cli']


@pytest.mark.long     # every operation, every phase
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_schemathesis_finds_nothing(cyborg, tmp_path):
    command = _st() + [
        '--config-file', CONFIG, '--no-color',
        'run', cyborg.url + '/openapi.json',
        '--url', cyborg.url,
        '--checks', 'all',
        '--exclude-checks', ','.join(CHECKS_OFF),
        '--phases', 'examples,coverage,fuzzing,stateful',
        '--max-examples', str(MAX_EXAMPLES),
        '--seed', str(SEED),
        '--workers', '1',
        '--continue-on-failure',
        '--request-timeout', '30',
        '--generation-database', 'none',
        '--report', 'junit',
        '--report-dir', str(tmp_path),
    ]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True,
                         text=True, timeout=RUN_TIMEOUT,
                         env=dict(os.environ, SCHEMATHESIS_HOOKS=''))
    output = run.stdout + run.stderr
    assert run.returncode == 0, 'schemathesis found failures:\n%s' % output
    # It did run: every documented operation was tested.
    assert 'Tested: ' in output, output
    # No error the answers hid: pecan answered 400 to a body that was not
    # UTF-8 but logged the traceback of its UnicodeDecodeError.
    with open(cyborg.log_path, errors='replace') as f:
        logged = [line for line in f
                  if ' ERROR ' in line or 'Traceback' in line]
    assert not logged, 'the all-in-one logged errors:\n%s' % ''.join(
        logged[:40])
