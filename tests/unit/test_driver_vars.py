"""The parameters of driver operations and where their playbooks are."""

import os

import jsonschema
import pytest

from cyborg_like.agent import playbooks
from cyborg_like.common import driver_vars


def _valid(family, action, params):
    jsonschema.validate(params, driver_vars.schema(family, action))


@pytest.mark.parametrize('family', driver_vars.FAMILIES)
def test_install_needs_a_version(family):
    with pytest.raises(jsonschema.ValidationError, match='version'):
        _valid(family, 'install', {})
    _valid(family, 'install', {'version': '2.1.0-1'})


@pytest.mark.parametrize('params', [
    {'version': '1.0', 'deb_path': '/tmp/a.deb',
     'apt_repository': 'deb http://repo.invalid/x bookworm main'},
    {'version': '1.0; rm -rf /'},
    {'version': '1.0', 'deb_path': 'relative.deb'},
    {'version': '1.0', 'apt_repository': 'deb http://x/ y\ndeb http://z/ w'},
    {'version': '1.0', 'apt_repository': 'deb [a\x00b] http://x/ y main'},
    {'version': '1.0', 'apt_repository': 'deb [\u00b3] http://x/ y main'},
    {'version': '1.0', 'unknown': 1},
    {'version': '1.0', 'package': 'Bad Name'},
])
def test_install_refuses(params):
    with pytest.raises(jsonschema.ValidationError):
        _valid('xrt', 'install', params)


def test_nvidia_only_takes_vgpu_manager():
    _valid('nvidia', 'upgrade', {'version': '535.*', 'vgpu_manager': True})
    with pytest.raises(jsonschema.ValidationError):
        _valid('opae', 'upgrade', {'version': '2.1', 'vgpu_manager': True})


def test_remove_and_verify_name_no_source():
    _valid('opae', 'remove', {'package': 'opae-tools'})
    _valid('opae', 'verify', {'version': '2.1.0-1', 'expected_devices': 2})
    for action in ('remove', 'verify'):
        with pytest.raises(jsonschema.ValidationError):
            _valid('opae', action, {'deb_path': '/tmp/opae.deb'})
    with pytest.raises(jsonschema.ValidationError):
        _valid('opae', 'remove', {'version': '2.1'})


def test_unknown_family_or_action():
    with pytest.raises(ValueError):
        driver_vars.schema('amd', 'install')
    with pytest.raises(ValueError):
        playbooks.playbook_path('nvidia', 'flash')


def test_extravars_prefix_the_family():
    assert playbooks.extravars('nvidia', 'upgrade', {
        'version': '550.54.15-1', 'vgpu_manager': True}) == {
        'driver_family': 'nvidia', 'driver_action': 'upgrade',
        'nvidia_version': '550.54.15-1', 'nvidia_vgpu_manager': True}


@pytest.mark.parametrize('action,entry', [
    ('install', 'install.yml'), ('upgrade', 'install.yml'),
    ('remove', 'remove.yml'), ('verify', 'verify.yml')])
def test_playbook_path_is_the_shipped_entry(action, entry):
    path = playbooks.playbook_path('xrt', action)
    assert os.path.basename(path) == entry
    assert os.path.isfile(path)
    roles = os.path.join(os.path.dirname(path), 'roles')
    assert sorted(os.listdir(roles)) == sorted(
        driver_vars.FAMILIES + ('driver_package',))


def test_playbooks_dir_root_must_hold_the_entries(tmp_path):
    with pytest.raises(FileNotFoundError):
        playbooks.playbooks_dir(str(tmp_path))
    (tmp_path / 'install.yml').write_text('---\n')
    assert playbooks.playbooks_dir(str(tmp_path)) == str(tmp_path)


def test_setup_cfg_installs_every_playbook_file():
    """An installed package has the playbooks where playbooks_dir()
    looks: <prefix>/share/cyborg_like/playbooks, the same tree."""
    import configparser
    import fnmatch
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(repo, 'setup.cfg'))
    data_files = cfg['options.data_files']
    for dirpath, _, names in os.walk(os.path.join(repo, 'playbooks')):
        rel = os.path.relpath(dirpath, repo)
        for name in names:
            if name.startswith('.'):
                continue
            globs = data_files.get('share/cyborg_like/' + rel, '')
            path = os.path.join(rel, name)
            assert any(fnmatch.fnmatch(path, g.strip())
                       for g in globs.split(',') if g.strip()), path
