"""The package on its own: a wheel built from a clean clone, installed in
an empty virtualenv with only its declared dependencies, runs the service.

It needs PyPI (the build backend and the dependencies) and takes a minute
or two, so it is an integration test. The clone holds what is committed:
it proves that pbr finds its version, that requirements.txt reaches the
wheel's metadata and that the data files are shipped.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
import requests

from .infra import free_port

# long: a wheel built and installed in a new virtualenv (BUILD_TIMEOUT and
# INSTALL_TIMEOUT, the fixture's setup included in the test's timeout;
# tests/ordering.py starts it first).
pytestmark = [pytest.mark.integration, pytest.mark.long,
              pytest.mark.timeout(1500)]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CONSTRAINTS = os.path.join(ROOT, 'constraints.txt')
BUILD_TIMEOUT = 300
INSTALL_TIMEOUT = 900
START_TIMEOUT = 60
SHARED = ('cyborg_like.conf.sample', 'cyborg_like.conf.example',
          'policy.yaml.sample', 'policy-cyborg-compatible.yaml',
          'fake-inventory.yaml.sample',
          'gunicorn.conf.py', 'api_audit_map.conf',
          'systemd/cyborg-like-api.service',
          'systemd/cyborg-like-conductor.service',
          'systemd/cyborg-like-agent.service',
          'prometheus/cyborg-like-alerts.yml',
          'grafana/cyborg-like-fleet.json')


def _run(argv, timeout, **kwargs):
    # Outside the tree: Python puts the working directory first on
    # sys.path, where the tree's cyborg_like and its egg-info would be
    # found before the installed ones.
    kwargs.setdefault('cwd', tempfile.gettempdir())
    done = subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout, **kwargs)
    assert done.returncode == 0, '%s failed (%s):\n%s\n%s' % (
        ' '.join(argv), done.returncode, done.stdout[-3000:],
        done.stderr[-3000:])
    return done.stdout


def _clean_env():
    """No trace of the test's own virtualenv or of the tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'VIRTUAL_ENV', 'PYTHONHOME')}
    env['PATH'] = os.pathsep.join(
        p for p in env.get('PATH', '').split(os.pathsep)
        if not p.startswith(os.path.dirname(sys.executable)))
    return env


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """(virtualenv path, wheel name) of the wheel, installed."""
    work = tmp_path_factory.mktemp('packaging')
    source = str(work / 'source')
    _run(['git', 'clone', '--quiet', ROOT, source], 120)
    wheels = str(work / 'wheels')
    _run([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps',
          '--wheel-dir', wheels, source], BUILD_TIMEOUT, env=_clean_env())
    [wheel] = os.listdir(wheels)
    venv = str(work / 'venv')
    base_python = getattr(sys, '_base_executable', sys.executable)
    _run([base_python, '-m', 'venv', venv], 120, env=_clean_env())
    _run([os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install',
          '--quiet', '-c', CONSTRAINTS, os.path.join(wheels, wheel)],
         INSTALL_TIMEOUT, env=_clean_env())
    return venv, wheel


def test_wheel_declares_its_version_and_dependencies(installed):
    venv, wheel = installed
    # pbr's version from git (no tag: 0.0.1.devN), not a placeholder.
    assert wheel.startswith('cyborg_like-0.0.1.dev'), wheel
    python = os.path.join(venv, 'bin', 'python')
    assert 'No broken requirements' in _run(
        [python, '-m', 'pip', 'check'], 120, env=_clean_env())
    out = _run([python, '-c', 'import importlib.metadata as m; '
                'print("\\n".join(m.requires("cyborg_like")))'], 60,
               env=_clean_env())
    with open(os.path.join(ROOT, 'requirements.txt')) as f:
        declared = [line.split('#')[0].strip() for line in f]
    for requirement in filter(None, declared):
        assert requirement.replace(' ', '') in out.replace(' ', ''), \
            requirement


def test_data_files_are_shipped(installed):
    venv, _ = installed
    share = os.path.join(venv, 'share', 'cyborg_like')
    for name in SHARED:
        assert os.path.getsize(os.path.join(share, name)) > 0, name
    license_files = _run([os.path.join(venv, 'bin', 'python'), '-c',
                          'import importlib.metadata as m; print(m.files('
                          '"cyborg_like"))'], 60, env=_clean_env())
    assert 'licenses/LICENSE' in license_files


def test_all_in_one_runs_from_the_wheel(installed, tmp_path):
    venv, _ = installed
    port = free_port()
    config = tmp_path / 'cyborg_like.conf'
    config.write_text(textwrap.dedent('''\
        [DEFAULT]
        state_path = %s
        [api]
        port = %d
        ''' % (tmp_path / 'state', port)))
    log = open(tmp_path / 'all-in-one.log', 'w+')
    env = dict(_clean_env(), HOME=str(tmp_path))
    process = subprocess.Popen(
        [os.path.join(venv, 'bin', 'cyborg-like-all-in-one'),
         '--config-file', str(config)],
        cwd=str(tmp_path), env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        devices = _wait_for_devices(port, process, log)
        assert {d['type'] for d in devices} == {'FPGA', 'GPU'}
        # The process runs the installed code, not the tree's.
        imported = _run([os.path.join(venv, 'bin', 'python'), '-c',
                         'import cyborg_like; print(cyborg_like.__file__)'],
                        60, cwd=str(tmp_path), env=env)
        assert imported.startswith(venv), imported
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    log.seek(0)
    output = log.read()
    assert code == 0, output
    assert 'Traceback' not in output, output


def _wait_for_devices(port, process, log):
    url = 'http://127.0.0.1:%d/v2/devices' % port
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            pytest.fail('cyborg-like-all-in-one exited with %s:\n%s'
                        % (process.returncode, log.read()))
        try:
            response = requests.get(url, timeout=5)
            if response.status_code == 200 and response.json()['devices']:
                return response.json()['devices']
        except requests.ConnectionError:
            pass
        time.sleep(0.5)
    log.seek(0)
    pytest.fail('No devices at %s within %ss:\n%s'
                % (url, START_TIMEOUT, log.read()))


def test_build_without_git_metadata_needs_pbr_version(tmp_path):
    """A tarball of the tree (no .git) builds when PBR_VERSION is set, as
    README.md says."""
    source = tmp_path / 'source'
    _run(['git', 'clone', '--quiet', ROOT, str(source)], 120)
    shutil.rmtree(source / '.git')
    wheels = tmp_path / 'wheels'
    env = dict(_clean_env(), PBR_VERSION='1.2.3')
    _run([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps',
          '--wheel-dir', str(wheels), str(source)], BUILD_TIMEOUT, env=env)
    assert os.listdir(wheels) == ['cyborg_like-1.2.3-py3-none-any.whl']
