"""[agent] playbook_dir's help says the layout the agent runs (issue 34:
it said <family>/<action>.yml, which nothing reads)."""

import os

from cyborg_like.agent import playbooks
from cyborg_like.common import driver_vars
from cyborg_like.conf import agent as agent_conf


def _help():
    [opt] = [o for o in agent_conf.opts if o.name == 'playbook_dir']
    return ' '.join(opt.help.split())


def test_the_help_names_every_entry_playbook_and_the_roles():
    help_text = _help()
    for entry in set(playbooks._ENTRY.values()):
        assert entry in help_text
    assert 'roles/<family>/tasks/<action>.yml' in help_text
    assert '<family>/<install|remove|verify>.yml' not in help_text


def test_the_shipped_playbooks_are_laid_out_as_the_help_says():
    root = playbooks.playbooks_dir()
    for entry in set(playbooks._ENTRY.values()):
        assert os.path.isfile(os.path.join(root, entry)), entry
    for family in driver_vars.FAMILIES:
        for action in ('install', 'remove', 'verify'):
            path = os.path.join(root, 'roles', family, 'tasks',
                                action + '.yml')
            assert os.path.isfile(path), path
