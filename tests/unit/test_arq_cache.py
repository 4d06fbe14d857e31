"""ARQ answers kept by an API process (api/arq_cache.py): given again
while every generation they depend on is current and unchanged and this
process wrote nothing since; asked for again otherwise."""

import pytest

from tests.unit.test_read_model import modelled


class Conductor:
    """Snapshots of empty families with the generations the test sets;
    ARQs as the test sets them; counts the ARQ calls."""

    def __init__(self):
        self.generations = {'devices': 1, 'deployables': 1,
                            'device_profiles': 1, 'arqs': 1}
        # Changed long before any copy (a binding that ended after the
        # copy makes the read model read deployables again first).
        self.arqs = {'a1': {'uuid': 'a1', 'project_id': 'p1',
                            'state': 'Initial',
                            'updated_at': '2001-01-01T00:00:00+00:00'}}
        self.asked = 0

    def read_model_snapshot(self, context, known):
        rows = {'devices': [], 'device_profiles': [],
                'deployables': {'deployables': [], 'attributes': []}}
        return {'generations': dict(self.generations),
                'families': {f: rows[f] for f in rows
                             if known.get(f) != self.generations[f]},
                'dialect': 'sqlite'}

    def get_arq(self, context, uuid):
        self.asked += 1
        return dict(self.arqs[uuid])

    def list_arqs(self, context, filters, limit, marker, sort_key,
                  sort_dir):
        self.asked += 1
        return [dict(a) for a in self.arqs.values()]

    def bind_arqs(self, context, bindings):
        for uuid in bindings:
            self.arqs[uuid]['state'] = 'Bound'
        self.generations['arqs'] += 1


class Context:
    read_generation = None

    def __init__(self, project_id='p1', all_projects=False):
        self.project_id = project_id
        self.all_projects = all_projects


@pytest.fixture
def api():
    api = modelled(Conductor(), answers=2)
    api.model.refresh()
    return api


@pytest.fixture
def conductor(api):
    return api._api


def _show(api):
    return api.get_arq(Context(), 'a1')['state']


def test_an_answer_is_given_again_while_nothing_moved(api, conductor):
    assert _show(api) == 'Initial'
    assert _show(api) == 'Initial'
    assert conductor.asked == 1
    assert api.list_arqs(Context(), {'instance_uuid': None}, 10, None,
                         'created_at', 'asc')[0]['uuid'] == 'a1'
    api.list_arqs(Context(), {'instance_uuid': None}, 10, None,
                  'created_at', 'asc')
    assert conductor.asked == 2
    # Another query is another answer.
    api.list_arqs(Context(), {'instance_uuid': 'i1'}, 10, None,
                  'created_at', 'asc')
    assert conductor.asked == 3


def test_a_write_of_this_process_is_seen_by_its_next_read(api, conductor):
    assert _show(api) == 'Initial'
    api.bind_arqs(Context(), {'a1': {}})
    # Before any announcement or snapshot: the write itself moved it.
    assert _show(api) == 'Bound'
    assert conductor.asked == 2


def test_an_announced_generation_ends_what_was_kept(api, conductor):
    assert _show(api) == 'Initial'
    conductor.arqs['a1']['state'] = 'Bound'     # another process's bind
    assert _show(api) == 'Initial'              # not heard of yet
    api.model.announce({'arqs': 2})
    assert _show(api) == 'Bound'
    assert _show(api) == 'Bound'
    assert conductor.asked == 2


def test_a_change_of_a_family_it_shows_ends_what_was_kept(api, conductor):
    assert _show(api) == 'Initial'
    conductor.generations['device_profiles'] = 2
    api.model.announce({'device_profiles': 2})
    # The copy of profiles is not current until read again: no answer
    # is given from here meanwhile, nor kept.
    _show(api)
    _show(api)
    assert conductor.asked == 3
    api.model.refresh()
    _show(api)
    _show(api)
    assert conductor.asked == 4


def test_a_missed_announcement_is_found_by_the_next_check(api, conductor):
    assert _show(api) == 'Initial'
    conductor.arqs['a1']['state'] = 'Bound'
    conductor.generations['arqs'] = 5
    api.model.refresh()
    assert _show(api) == 'Bound'


def test_an_older_announcement_does_not_undo_a_newer(api, conductor):
    api.model.announce({'arqs': 4})
    api.model.announce({'arqs': 3})
    assert api.model.family('arqs').generation == 4


def test_other_projects_are_not_shown_what_was_kept(api, conductor):
    admin = Context(project_id='admin', all_projects=True)
    assert api.get_arq(admin, 'a1')['project_id'] == 'p1'
    assert api.get_arq(Context(), 'a1')['project_id'] == 'p1'
    assert conductor.asked == 1
    # The conductor answers the other project (here: it finds it; the
    # real one says not found), and is asked each time.
    api.get_arq(Context(project_id='p2'), 'a1')
    assert conductor.asked == 2


def test_lists_are_kept_per_project(api, conductor):
    query = ({}, 10, None, 'created_at', 'asc')
    api.list_arqs(Context(), *query)
    api.list_arqs(Context(project_id='p2'), *query)
    api.list_arqs(Context(project_id='admin', all_projects=True), *query)
    assert conductor.asked == 3


def test_the_least_recently_used_goes_first(api, conductor):
    conductor.arqs['a2'] = {'uuid': 'a2', 'project_id': 'p1'}
    conductor.arqs['a3'] = {'uuid': 'a3', 'project_id': 'p1'}
    for uuid in ('a1', 'a2', 'a1', 'a3', 'a1', 'a2'):
        api.get_arq(Context(), uuid)
    # a1 a2 asked; a1 kept; a3 pushes a2 out; a1 kept; a2 asked again.
    assert conductor.asked == 4


def test_nothing_is_kept_without_the_arq_generation():
    # A conductor older than RPC 1.20 does not say it.
    conductor = Conductor()
    del conductor.generations['arqs']
    api = modelled(conductor, answers=2)
    api.model.refresh()
    _show(api)
    _show(api)
    assert conductor.asked == 2


def test_a_failed_write_still_ends_what_was_kept(api, conductor):
    _show(api)

    def fail(context, bindings):
        conductor.arqs['a1']['state'] = 'Bound'     # committed, then lost
        raise TimeoutError()
    conductor.bind_arqs = fail
    with pytest.raises(TimeoutError):
        api.bind_arqs(Context(), {'a1': {}})
    assert _show(api) == 'Bound'
