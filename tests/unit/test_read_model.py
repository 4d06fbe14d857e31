"""The API's read model on its own: when a copy is current, how it pages
and filters, and how it re-syncs (api/read_model/)."""

import pytest

from cyborg_like.api import arq_cache
from cyborg_like.api import read_model


def _device(n, **fields):
    return dict({'uuid': 'dev-%d' % n, 'type': 'GPU', 'vendor': '10de',
                 'hostname': 'h%d' % (n % 2), 'status': 'enabled',
                 'created_at': 't%d' % n}, **fields)


class Conductor:
    """Answers read_model_snapshot from what the test set; counts calls."""

    def __init__(self):
        self.generations = {'devices': 1, 'deployables': 1,
                            'device_profiles': 1}
        self.devices = [_device(n) for n in range(5)]
        self.dialect = 'sqlite'
        self.calls = 0
        self.fail = False

    def read_model_snapshot(self, context, known):
        self.calls += 1
        if self.fail:
            raise RuntimeError('the conductor is away')
        rows = {'devices': self.devices,
                'deployables': {'deployables': [], 'attributes': []},
                'device_profiles': []}
        return {'generations': dict(self.generations),
                'families': {f: rows[f] for f in self.generations
                             if known.get(f) != self.generations[f]},
                'dialect': self.dialect}

    def list_devices(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        return 'from the conductor'

    def set_device_status(self, context, uuid, status):
        self.generations['devices'] += 1
        self.devices = [dict(d, status=status) if d['uuid'] == uuid else d
                        for d in self.devices]


class Context:
    read_generation = None


@pytest.fixture
def conductor():
    return Conductor()


def modelled(conductor, answers=16):
    """The API's conductor client over ``conductor``: copies kept by calls
    to refresh only, ``answers`` ARQ answers kept."""
    model = read_model.ReadModel(conductor, 60, background=False)
    return read_model.ModelledConductorAPI(
        conductor, model, arq_cache.ArqCache(model, answers))


@pytest.fixture
def api(conductor):
    return modelled(conductor)


def _uuids(found):
    return [d['uuid'] for d in found]


def test_nothing_is_served_before_the_first_snapshot(api):
    assert api.list_devices(Context(), {}, 10, None, 'created_at',
                            'asc') == 'from the conductor'


def test_pages_as_the_database_does(api):
    api.model.refresh()
    ctx = Context()
    page = api.list_devices(ctx, {}, 2, None, 'created_at', 'asc')
    assert _uuids(page) == ['dev-0', 'dev-1']
    assert ctx.read_generation == 'devices:1'
    assert _uuids(api.list_devices(ctx, {}, 2, 'dev-1', 'created_at',
                                   'asc')) == ['dev-2', 'dev-3']
    assert _uuids(api.list_devices(ctx, {}, 10, 'dev-2', 'created_at',
                                   'desc')) == ['dev-1', 'dev-0']
    assert api.list_devices(ctx, {}, 10, 'dev-0', 'created_at',
                            'desc') == []
    assert _uuids(api.list_devices(ctx, {}, 2, None, 'created_at',
                                   'desc')) == ['dev-4', 'dev-3']
    assert _uuids(api.list_devices(ctx, {'hostname': 'h1'}, 10, 'dev-1',
                                   'created_at', 'asc')) == ['dev-3']


@pytest.mark.parametrize('filters, limit, marker, sort_key', [
    ({}, 10, None, 'vendor'),           # another order: the database's
    ({}, 10, 'nowhere', 'created_at'),  # unknown marker: the 400 is its
])
def test_what_the_copy_cannot_answer_goes_to_the_conductor(
        api, filters, limit, marker, sort_key):
    api.model.refresh()
    assert api.list_devices(Context(), filters, limit, marker, sort_key,
                            'asc') == 'from the conductor'


def test_collated_comparisons_it_cannot_decide_go_to_the_conductor(
        api, conductor):
    conductor.dialect = 'mysql'
    conductor.devices[0]['vendor'] = '10DE'
    api.model.refresh()
    ctx = Context()
    # Equal only ignoring case: the answer depends on the collation.
    assert api.list_devices(ctx, {'vendor': '10de'}, 10, None, 'created_at',
                            'asc') == 'from the conductor'
    # No row differs from the value by case alone: every collation agrees.
    assert _uuids(api.list_devices(ctx, {'hostname': 'h1'}, 10, None,
                                   'created_at', 'asc')) == ['dev-1', 'dev-3']
    assert api.list_devices(ctx, {'hostname': 'h1 '}, 10, None,
                            'created_at', 'asc') == 'from the conductor'


def test_an_announced_generation_stops_the_copy_until_read_again(
        api, conductor):
    api.model.refresh()
    conductor.generations['devices'] = 2
    conductor.devices[0]['status'] = 'maintaining'
    api.model.announce({'devices': 2})
    assert api.model.family('devices') is None
    api.model.refresh()
    ctx = Context()
    assert api.get_device(ctx, 'dev-0')['status'] == 'maintaining'
    assert ctx.read_generation == 'devices:2'
    # An older announcement (another conductor's, late) changes nothing.
    api.model.announce({'devices': 1})
    assert api.model.family('devices') is not None


def test_a_lost_announcement_is_found_by_the_next_check(api, conductor):
    api.model.refresh()
    conductor.generations['devices'] = 7     # nothing announced
    conductor.devices = conductor.devices[1:]
    api.model.refresh()
    assert api.model.family('devices').generation == 7
    assert _uuids(api.list_devices(Context(), {}, 1, None, 'created_at',
                                   'asc')) == ['dev-1']


def test_a_restored_database_going_back_is_followed(api, conductor):
    conductor.generations['devices'] = 9
    api.model.refresh()
    conductor.generations['devices'] = 4
    conductor.devices = conductor.devices[:2]
    api.model.refresh()
    assert api.model.family('devices').generation == 4
    assert len(api.list_devices(Context(), {}, 10, None, 'created_at',
                                'asc')) == 2


def test_own_writes_are_read_back_through_the_conductor_until_caught_up(
        api, conductor):
    api.model.refresh()
    api.set_device_status(Context(), 'dev-0', 'maintaining')
    # The copy still says enabled: not used for this process's next read.
    assert api.model.family('devices') is None
    assert api.list_devices(Context(), {}, 1, None, 'created_at',
                            'asc') == 'from the conductor'
    api.model.refresh()
    assert api.get_device(Context(), 'dev-0')['status'] == 'maintaining'


def test_a_copy_not_confirmed_for_two_intervals_is_not_used(
        api, conductor):
    api.model.refresh()
    assert api.model.family('devices') is not None
    conductor.fail = True
    api.model.refresh()
    api.model.check_interval = 0
    assert api.model.family('devices') is None


def test_the_option_and_old_conductors_turn_it_off(conductor):
    class Conf:
        class api:
            read_model = True
            read_model_check_interval = 1.0
            read_model_arq_answers = 8
    assert read_model.wrap(conductor, Conf) is conductor   # no 1.17 there
    conductor.can_serve_read_model = lambda: True
    assert isinstance(read_model.wrap(conductor, Conf),
                      read_model.ModelledConductorAPI)
    # Conductors capped below 1.20 (a rolling upgrade): an older one
    # changes ARQs without their generation, so no ARQ answer is kept.
    assert read_model.wrap(conductor, Conf).arqs._size == 0
    conductor.can_keep_arq_answers = lambda: True
    assert read_model.wrap(conductor, Conf).arqs._size == 8
    Conf.api.read_model = False
    assert read_model.wrap(conductor, Conf) is conductor


def test_an_end_seen_newer_than_the_copy_is_read_back_through_the_conductor(
        api, conductor):
    shown = {}
    conductor.get_operation = lambda context, uuid: shown
    api.model.refresh()
    shown.update(state='succeeded', updated_at='2001-01-01T00:00:00+00:00')
    api.get_operation(Context(), 'op')      # ended long before the copy
    assert api.model.family('deployables') is not None
    shown.update(state='running', updated_at='2999-01-01T00:00:00+00:00')
    api.get_operation(Context(), 'op')      # not ended yet
    assert api.model.family('deployables') is not None
    shown.update(state='succeeded')         # ended after the copy
    api.get_operation(Context(), 'op')
    assert api.model.family('deployables') is None
    assert api.model.family('device_profiles') is not None
    api.model.refresh()
    assert api.model.family('deployables') is not None
