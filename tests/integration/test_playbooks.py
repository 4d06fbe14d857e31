"""The real playbooks/ run through ansible-runner against Debian roots.

Each test gets a fresh copy of a minimal Debian root (built once by
tools/make-debian-root.sh, cached) and reaches it with a chroot
connection: apt and dpkg install and remove real .deb packages there, and
the verify playbooks run the vendor tools those packages ship. The
packages are made here with dpkg-deb (tests/playbook_targets/debs.py) and
stand in for the vendor's: their tools are fakes reporting the cards and
the version of the installed package. Playbooks, parameters and extra
vars are the agent's (cyborg_like.agent.playbooks); the report is read
from the stats as the agent reads it. Needs root (chroot, debootstrap).
"""

import os
import shutil

import pytest

from tests.hardware.nvml.fixtures import build_fake_nvml
from tests.playbook_targets import debs
from tests.playbook_targets import targets

# A playbook run takes 10-30 s on a busy 2-core machine; the lifecycle
# test makes ten.
# long: a Debian root built on first use, playbooks run for real
# (tests/ordering.py starts it first).
pytestmark = [pytest.mark.integration, pytest.mark.long,
              pytest.mark.timeout(1200)]

NVIDIA_BLACKLIST = '/etc/modprobe.d/cyborg-like-blacklist-nouveau.conf'
WANTS = '/etc/systemd/system/multi-user.target.wants/'
PERSISTENCED = WANTS + 'nvidia-persistenced.service'


class Family:
    def __init__(self, name, package, tool, old, new, devices,
                 installed_files=()):
        self.name = name
        self.package = package
        self.tool = tool            # the file verify runs, in the root
        self.old = old
        self.new = new
        self.devices = devices      # the cards the fake tool lists
        # Files install leaves and remove takes away, besides the tool.
        self.installed_files = installed_files


FAMILIES = {
    'nvidia': Family('nvidia', 'nvidia-driver', '/usr/bin/nvidia-smi',
                     '550.54.15-1', '550.90.07-1', 2,
                     (NVIDIA_BLACKLIST, PERSISTENCED)),
    'opae': Family('opae', 'opae', '/usr/bin/fpgainfo',
                   '2.1.0-1', '2.12.0-5', 2),
    'xrt': Family('xrt', 'xrt', '/opt/xilinx/xrt/bin/xbmgmt',
                  '2.16.204-1', '2.17.319-1', 1),
}


@pytest.fixture(scope='session')
def debian_root():
    return targets.cached_root()


@pytest.fixture(scope='session')
def nvml_lib(tmp_path_factory):
    return build_fake_nvml(tmp_path_factory.mktemp('fake-nvml'))


@pytest.fixture
def target(debian_root, tmp_path):
    with targets.disposable_root(debian_root, str(tmp_path)) as root:
        yield targets.Target(root, str(tmp_path))


@pytest.fixture
def build(tmp_path, nvml_lib):
    """build(family, version) -> a .deb of the family's stand-in."""
    out = str(tmp_path / 'debs')
    os.makedirs(out)

    def _build(family, version, **kwargs):
        if family == 'nvidia':
            return debs.nvidia_driver(out, version, nvml_lib, **kwargs)
        return getattr(debs, family)(out, version, **kwargs)
    return _build


def _report(family, action, before, after, devices=None, reboot=False):
    return {'family': family, 'action': action, 'version_before': before,
            'version_after': after, 'devices_seen': devices,
            'reboot_required': reboot}


def _ok(run):
    assert run.status == 'successful', run.output()[-3000:]
    return run


@pytest.mark.parametrize('name', sorted(FAMILIES))
def test_install_verify_upgrade_remove(name, target, build):
    fam = FAMILIES[name]
    old = target.add_deb(build(name, fam.old))
    new = target.add_deb(build(name, fam.new))

    # Check mode: says what it would change, changes nothing.
    run = _ok(target.run(name, 'install', {'version': fam.old,
                                          'deb_path': old}, check=True))
    assert run.report == _report(name, 'install', None, None)
    assert any(task.startswith('Install from a local .deb')
               for task in run.changed_tasks)
    assert target.installed(fam.package) is None
    assert not target.exists(fam.tool)

    run = _ok(target.run(name, 'install', {'version': fam.old,
                                          'deb_path': old}))
    assert run.report == _report(name, 'install', None, fam.old)
    assert target.installed(fam.package) == fam.old
    for path in (fam.tool,) + fam.installed_files:
        assert target.exists(path), path

    for check in (False, True):
        run = _ok(target.run(name, 'verify', {'version': fam.old},
                             check=check))
        assert run.report == _report(name, 'verify', fam.old, fam.old,
                                     fam.devices)
        assert run.changed_tasks == []

    run = _ok(target.run(name, 'upgrade', {'version': fam.new,
                                          'deb_path': new}, check=True))
    assert target.installed(fam.package) == fam.old
    run = _ok(target.run(name, 'upgrade', {'version': fam.new,
                                          'deb_path': new}))
    assert run.report == _report(name, 'upgrade', fam.old, fam.new)
    assert target.installed(fam.package) == fam.new

    # Verify names the version it expects.
    run = target.run(name, 'verify', {'version': fam.old})
    assert run.status == 'failed'
    assert run.failed_tasks == [(
        'Check the installed version',
        '%s is at %s, not %s' % (fam.package, fam.new, fam.old))]

    _ok(target.run(name, 'remove', check=True))
    assert target.installed(fam.package) == fam.new
    run = _ok(target.run(name, 'remove'))
    assert run.report == _report(name, 'remove', fam.new, None)
    assert target.installed(fam.package) is None
    for path in (fam.tool,) + fam.installed_files:
        assert not target.exists(path), path

    # Nothing left to verify: a failed run naming the task, and a report.
    run = target.run(name, 'verify')
    assert run.status == 'failed'
    assert run.rc != 0
    assert run.report == _report(name, 'verify', None, None)
    assert run.failed_tasks == [(
        'Check the package is installed, %s' % fam.package,
        '%s is not installed' % fam.package)]


def test_nvidia_install_blacklists_nouveau_and_enables_services(
        target, build, tmp_path):
    deb = target.add_deb(build('nvidia', '550.54.15-1'))
    vgpu = target.add_deb(debs.nvidia_vgpu_manager(
        str(tmp_path / 'debs'), '550.54.15-1'))
    run = _ok(target.run('nvidia', 'install', {
        'version': '550.54.15-1', 'deb_path': deb, 'vgpu_manager': True,
        'vgpu_manager_deb_path': vgpu}))
    assert target.installed('nvidia-vgpu-manager') == '550.54.15-1'
    with open(target.path(NVIDIA_BLACKLIST)) as f:
        assert 'blacklist nouveau\n' in f.read().splitlines(True)
    for unit in ('nvidia-persistenced.service', 'nvidia-vgpu-mgr.service'):
        link = target.path(WANTS + unit)
        assert os.readlink(link).endswith('/systemd/system/' + unit)

    # A second run at the same version changes nothing.
    run = _ok(target.run('nvidia', 'install', {
        'version': '550.54.15-1', 'deb_path': deb, 'vgpu_manager': True,
        'vgpu_manager_deb_path': vgpu}))
    assert run.changed_tasks == []
    _ok(target.run('nvidia', 'verify', {'version': '550.54.15-1',
                                        'vgpu_manager': True}))

    _ok(target.run('nvidia', 'remove'))
    assert target.installed('nvidia-vgpu-manager') is None
    assert not target.exists(NVIDIA_BLACKLIST)


def test_nvidia_verify_reports_a_driver_library_mismatch(target, build):
    deb = target.add_deb(build('nvidia', '550.54.15-1'))
    _ok(target.run('nvidia', 'install', {'version': '550.54.15-1',
                                         'deb_path': deb}))
    # What NVML answers when the loaded kernel module is not the
    # installed library's: the host needs a reboot (or a module reload).
    # (System keys come before the fake's first [gpu] section.)
    with open(target.path(debs.NVML_DATA)) as f:
        system, _, gpus = f.read().partition('\n[gpu]')
    with open(target.path(debs.NVML_DATA), 'w') as f:
        f.write(system + '\nerror.nvmlInitWithFlags = LIB_RM_VERSION_MISMATCH'
                '\n[gpu]' + gpus)
    run = target.run('nvidia', 'verify')
    assert run.status == 'failed'
    assert run.report['reboot_required'] is True
    assert run.report['devices_seen'] is None
    [(task, msg)] = run.failed_tasks
    assert task == 'Check NVML loads and sees the GPUs'
    assert 'LIB_RM_VERSION_MISMATCH' in msg


def test_verify_fails_with_fewer_cards_than_expected(target, build):
    deb = target.add_deb(build('xrt', '2.16.204-1', cards=1))
    _ok(target.run('xrt', 'install', {'version': '2.16.204-1',
                                      'deb_path': deb}))
    run = target.run('xrt', 'verify', {'expected_devices': 2})
    assert run.status == 'failed'
    assert run.report['devices_seen'] == 1
    [(task, msg)] = run.failed_tasks
    assert task == 'Check the tool sees the devices'
    assert 'lists 1 device(s), expected at least 2' in msg


def test_install_from_an_apt_repository(target, build):
    """A repository line and a version pattern: apt picks the newest
    match among the repository's versions."""
    repo = '/srv/cyborg-like-repo'
    os.makedirs(target.path(repo))
    for version in ('2.1.0-1', '2.12.0-5', '2.12.1-1', '3.0.0-1'):
        shutil.copy(build('opae', version), target.path(repo))
    debs.write_packages_index(target.path(repo))
    # Only this repository: the test needs no mirror.
    open(target.path('/etc/apt/sources.list'), 'w').close()
    run = _ok(target.run('opae', 'install', {
        'version': '2.12.*',
        'apt_repository': 'deb [trusted=yes] file:%s ./' % repo}))
    assert run.report == _report('opae', 'install', None, '2.12.1-1')
    assert target.installed('opae') == '2.12.1-1'
    assert target.exists('/etc/apt/sources.list.d/cyborg-like-driver.list')


def test_a_repository_apt_cannot_read_fails_and_is_taken_out(target, build):
    """A bad line must not stay: one line apt cannot read fails every
    later apt update on the host, whatever installs."""
    open(target.path('/etc/apt/sources.list'), 'w').close()
    run = target.run('opae', 'install', {
        'version': '2.1.0-1',
        'apt_repository': 'deb [trusted=yes] file:/srv/not-there ./'})
    assert run.status == 'failed', run.output()[-3000:]
    [(task, _)] = run.failed_tasks
    assert task == "Add the driver's apt repository"
    assert not target.exists(
        '/etc/apt/sources.list.d/cyborg-like-driver.list')


def test_an_install_replaces_the_line_a_stopped_run_left(target, build):
    """A run killed while apt read its line leaves it behind; the next
    install that names a repository replaces it instead of adding to it."""
    repo = '/srv/cyborg-like-repo'
    os.makedirs(target.path(repo))
    shutil.copy(build('opae', '2.1.0-1'), target.path(repo))
    debs.write_packages_index(target.path(repo))
    open(target.path('/etc/apt/sources.list'), 'w').close()
    listed = '/etc/apt/sources.list.d/cyborg-like-driver.list'
    with open(target.path(listed), 'w') as f:
        f.write('deb [trusted=yes] file:/srv/gone ./\n')
    line = 'deb [trusted=yes] file:%s ./' % repo
    _ok(target.run('opae', 'install', {'version': '2.1.0-1',
                                       'apt_repository': line}))
    assert target.installed('opae') == '2.1.0-1'
    with open(target.path(listed)) as f:
        assert f.read().split('\n')[0] == line
