"""The clouds tests and benchmarks start never run the real driver
playbooks: those change the machine they run on (a schemathesis run once
left this machine's apt with a source it could not fetch)."""

import configparser
import os

from harness import cloud


def _agent_config(workdir, **kwargs):
    made = cloud.Cloud(str(workdir), **kwargs)
    parser = configparser.ConfigParser()
    parser.read(made.config_files)
    return made, parser


def test_every_layout_runs_the_stand_in_playbooks(tmp_path):
    for layout in (cloud.SPLIT, cloud.ALL_IN_ONE):
        workdir = tmp_path / layout
        workdir.mkdir()
        made, parser = _agent_config(workdir, layout=layout)
        assert parser['agent']['playbook_dir'] == cloud.STAND_IN_PLAYBOOKS
        assert os.path.exists(os.path.join(cloud.STAND_IN_PLAYBOOKS,
                                           'install.yml'))
        agent = made.services['agent' if layout == cloud.SPLIT
                              else 'all-in-one']
        assert agent.env['CYBORG_LIKE_TEST_DRIVERS'] == made.drivers_dir
        assert parser['fake_driver']['driver_state_dir'] == made.drivers_dir


def test_a_caller_may_name_its_own_drivers_directory(tmp_path):
    made, _ = _agent_config(
        tmp_path, agent_env={'CYBORG_LIKE_TEST_DRIVERS': '/elsewhere'})
    assert made.services['agent'].env['CYBORG_LIKE_TEST_DRIVERS'] == \
        '/elsewhere'
