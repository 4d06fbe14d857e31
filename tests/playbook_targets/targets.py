"""Debian roots to run the playbooks against, and the run itself.

A root is a copy of the cached one tools/make-debian-root.sh builds; the
playbooks reach it through the chroot_dir connection (connection/) and
ansible-runner runs them exactly as the agent does: playbook_path() and
extravars() of cyborg_like.agent.playbooks, validated by the same schema
the API uses.
"""

import contextlib
import os
import shutil
import subprocess
import sys

import ansible_runner
import jsonschema
import pytest

from cyborg_like.agent import playbooks
from tests.playbook_targets import debs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CONNECTIONS = os.path.join(HERE, 'connection')
# Where the tests put their .deb files inside a root.
DEB_DIR = '/var/cache/cyborg-like-debs'
RUN_TIMEOUT = 300


def cached_root():
    """The cached root, built by the tools script on first use."""
    proc = subprocess.run([os.path.join(REPO, 'tools', 'make-debian-root.sh')],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail('tools/make-debian-root.sh failed:\n' + proc.stderr,
                    pytrace=False)
    return proc.stdout.strip().splitlines()[-1]


@contextlib.contextmanager
def disposable_root(cached, work_dir):
    """A writable copy of ``cached`` for one test: an overlay mount (the
    cached root stays untouched below it) or, where overlayfs cannot be
    mounted, a full copy (~250 MB)."""
    layers = {name: os.path.join(work_dir, 'root-' + name)
              for name in ('upper', 'work', 'merged')}
    for path in layers.values():
        os.makedirs(path)
    mounted = subprocess.run(
        ['mount', '-t', 'overlay', 'overlay', '-o',
         'lowerdir=%s,upperdir=%s,workdir=%s' % (
             cached, layers['upper'], layers['work']), layers['merged']],
        capture_output=True).returncode == 0
    if not mounted:
        os.rmdir(layers['merged'])
        subprocess.run(['cp', '-a', cached, layers['merged']], check=True)
    try:
        yield layers['merged']
    finally:
        if mounted:
            subprocess.run(['umount', '--lazy', layers['merged']],
                           check=True)
        for path in layers.values():
            shutil.rmtree(path, ignore_errors=True)


class Target:
    """A disposable Debian root and the runs made against it."""

    def __init__(self, root, work_dir):
        self.root = root
        self.work_dir = work_dir
        self.runs = 0

    def path(self, inside):
        return os.path.join(self.root, inside.lstrip('/'))

    def exists(self, inside):
        return os.path.lexists(self.path(inside))

    def add_deb(self, deb):
        """Copy a built .deb into the root; its path there."""
        os.makedirs(self.path(DEB_DIR), exist_ok=True)
        shutil.copy(deb, self.path(DEB_DIR))
        return os.path.join(DEB_DIR, os.path.basename(deb))

    def installed(self, package):
        """dpkg's view from inside the root: version, or None."""
        proc = subprocess.run(
            ['chroot', self.root, 'dpkg-query', '-W',
             '-f=${db:Status-Status} ${Version}', package],
            capture_output=True, text=True)
        status, _, version = proc.stdout.partition(' ')
        return version if status == 'installed' else None

    def run(self, family, action, params=None, check=False):
        params = params or {}
        jsonschema.validate(params, playbooks.schema(family, action))
        self.runs += 1
        data_dir = os.path.join(self.work_dir, 'run-%d' % self.runs)
        os.makedirs(data_dir)
        result = ansible_runner.run(
            private_data_dir=data_dir,
            playbook=playbooks.playbook_path(family, action),
            inventory={'all': {'hosts': {'target': {
                'ansible_connection': 'chroot_dir',
                'ansible_host': self.root,
                'ansible_python_interpreter': '/usr/bin/python3'}}}},
            extravars=playbooks.extravars(family, action, params),
            envvars={'ANSIBLE_CONNECTION_PLUGINS': CONNECTIONS,
                     'ANSIBLE_NOCOLOR': '1',
                     'ANSIBLE_PIPELINING': 'True',
                     'FAKE_NVML_DATA': debs.NVML_DATA,
                     'PATH': _path()},
            cmdline='--check --diff' if check else None,
            timeout=RUN_TIMEOUT, quiet=True)
        return Run(result)


class Run:
    """What the agent reads from a finished ansible-runner run."""

    def __init__(self, runner):
        self.runner = runner
        self.status = runner.status
        self.rc = runner.rc
        self.events = list(runner.events)

    @property
    def report(self):
        """The playbooks' stats (set_stats), as the agent reads them."""
        for event in self.events:
            if event.get('event') == 'playbook_on_stats':
                data = event['event_data'].get('artifact_data', {})
                return data.get(playbooks.STATS_KEY)
        return None

    @property
    def failed_tasks(self):
        return [(e['event_data']['task'],
                 e['event_data']['res'].get('msg', ''))
                for e in self.events if e.get('event') == 'runner_on_failed'
                and not e['event_data'].get('ignore_errors')]

    @property
    def changed_tasks(self):
        return [e['event_data']['task'] for e in self.events
                if e.get('event') == 'runner_on_ok'
                and e['event_data']['res'].get('changed')]

    def output(self):
        return self.runner.stdout.read()


def _path():
    # ansible-playbook lives beside the interpreter running the tests.
    return os.pathsep.join([os.path.dirname(sys.executable),
                            os.environ.get('PATH', '/usr/bin:/bin')])
