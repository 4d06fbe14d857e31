"""The declared state machines (common/states.py) as the database applies
them: every illegal transition is refused and changes nothing; a binding
superseded by an unbind and a new bind never takes a second handle."""

import itertools

import pytest

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import api as db_api
from cyborg_like.db import arqs
from cyborg_like.db import bitstreams
from cyborg_like.db import models
from cyborg_like.db import operations
from tests import arq_world

INSTANCE = '70000000-0000-0000-0000-000000000001'
ATTEMPT = '00000000-0000-4000-8000-00000000a77e'


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    with arq_world.World.on_sqlite(
            tmp_path_factory.mktemp('states')) as world:
        yield world


def test_arq_machine_is_cyborgs():
    assert set(states.ALL) == {'Initial', 'BindStarted', 'Bound',
                               'BindFailed', 'Unbound'}
    expected = {
        states.BIND: ({'Initial', 'Unbound'}, 'BindStarted'),
        states.FINISH: ({'BindStarted'}, 'Bound'),
        states.FAIL: ({'BindStarted'}, 'BindFailed'),
        states.UNBIND: ({'BindStarted', 'Bound', 'BindFailed'}, 'Unbound'),
    }
    assert {e: (set(states.ARQ.sources(e)), states.ARQ.target(e))
            for e in states.ARQ.events} == expected


def test_operation_machine():
    machine = states.OPERATION
    assert {e: (set(machine.sources(e)), machine.target(e))
            for e in machine.events} == {
        'start': ({'pending'}, 'running'),
        'succeed': ({'running'}, 'succeeded'),
        'fail': ({'pending', 'running', 'cancelling'}, 'failed'),
        'cancel': ({'pending', 'running'}, 'cancelling'),
        'abort': ({'cancelling'}, 'cancelled')}


def _apply(world, uuid, event):
    """Apply ``event`` to ARQ ``uuid`` through the DB API's own entry."""
    if event == states.BIND:
        try:
            arqs.start_bind({uuid: world.fields(INSTANCE)})
        except exception.ARQBadState:
            return 'refused'
    elif event == states.FINISH:
        return arqs.finish_bind(uuid, ATTEMPT) or 'refused'
    elif event == states.FAIL:
        return arqs.fail_bind(uuid, ATTEMPT, 'broken') or 'refused'
    else:
        return arqs.unbind([uuid]) or 'refused'


def _arq_state(world, uuid):
    arq_rows, _handles = world.rows()
    return next(a.state for a in arq_rows if a.uuid == uuid)


def _with_attempt(uuid):
    with db_api.writer() as session:
        session.execute(arqs.sa.update(arqs.ARQ).where(arqs.ARQ.uuid == uuid)
                        .values(bind_attempt=ATTEMPT))


ILLEGAL = [(s, e) for s, e in itertools.product(states.ARQ.states,
                                                 states.ARQ.events)
           if not states.ARQ.allows(s, e)]


@pytest.fixture
def arq(world):
    """A fresh ARQ, deleted after the test whatever its state."""
    uuid = world.new_arq()
    yield uuid
    arqs.delete(uuids=[uuid], delete_bound=True)


@pytest.mark.parametrize('state,event', ILLEGAL)
def test_every_illegal_arq_transition_is_refused(world, arq, state, event):
    world.set_state(arq, state)
    _with_attempt(arq)
    assert _apply(world, arq, event) == 'refused'
    assert _arq_state(world, arq) == state


@pytest.mark.parametrize('state,event', [
    (s, e) for s, e in itertools.product(states.ARQ.states,
                                         states.ARQ.events)
    if states.ARQ.allows(s, e)])
def test_every_legal_arq_transition_is_applied(world, arq, state, event):
    world.set_state(arq, state)
    _with_attempt(arq)
    _apply(world, arq, event)
    assert _arq_state(world, arq) == states.ARQ.target(event)


@pytest.mark.parametrize('state,event', [
    (s, e) for s, e in itertools.product(states.OPERATION.states,
                                         states.OPERATION.events)])
def test_operation_transitions(world, state, event):
    with db_api.writer() as session:
        operation = operations.add(session, 'program', INSTANCE, 'p1')
        operation.state = state
        uuid = operation.uuid
    applied = operations.apply(uuid, event, 'detail')
    assert applied == states.OPERATION.allows(state, event)
    expected = states.OPERATION.target(event) if applied else state
    assert operations.get(uuid)['state'] == expected


def test_a_superseded_binding_takes_no_handle(world):
    """Bind X, unbind X, bind X while the first binding is still queued:
    the first binding's work finds itself superseded and takes nothing;
    the second binds with exactly one handle."""
    x = world.new_arq()
    first = arqs.start_bind({x: world.fields(INSTANCE)})[x]
    arqs.unbind([x])
    second = arqs.start_bind({x: world.fields(INSTANCE)})[x]
    assert world.finish(x, first) == 'BindingSuperseded'
    world.check_invariants()
    assert world.finish(x, second) == states.FINISH
    world.check_invariants()
    _arqs, handles = world.rows()
    assert sum(h.in_use for h in handles) == 1
    arqs.delete(uuids=[x], delete_bound=True)
    assert sum(h.in_use for h in world.rows()[1]) == 0


def test_unbind_after_allocation_frees_the_handle_once(world):
    """The handle a binding took goes back with the unbind; the binding's
    finish and failure are then no-ops that free nothing twice."""
    x, y = world.new_arq(), world.new_arq()
    attempt = arqs.start_bind({x: world.fields(INSTANCE)})[x]
    arqs.allocate(x, attempt, arq_world.HOST_DOWN_AFTER)
    released = arqs.unbind([x])
    assert len(released) == 1
    assert arqs.finish_bind(x, attempt) is False
    assert arqs.fail_bind(x, attempt, 'agent failed') is None
    world.check_invariants()
    # Both handles are free again: two other bindings get one each.
    other = '70000000-0000-0000-0000-000000000002'
    assert world.bind(y, other) == states.FINISH
    assert world.bind(x, INSTANCE) == states.FINISH
    world.check_invariants()
    arqs.delete(uuids=[x, y], delete_bound=True)


def test_image_machine():
    machine = states.BITSTREAM
    assert {e: (set(machine.sources(e)), machine.target(e))
            for e in machine.events} == {
        'upload': ({'queued', 'uploading', 'failed'}, 'uploading'),
        'activate': ({'uploading'}, 'active'),
        'fail': ({'uploading'}, 'failed')}


def _image_in(state):
    """An image record in ``state`` whose upload (if any) is ``U``."""
    image = bitstreams.create({'name': 'machine-%s' % state})
    with db_api.writer() as session:
        row = session.query(models.Bitstream).filter_by(
            uuid=image['uuid']).one()
        row.status, row.upload_id = state, 'U'
    return image['uuid']


def _apply_image(uuid, event):
    """``event`` through the DB API's own entry; False when refused."""
    try:
        if event == states.UPLOAD:
            bitstreams.begin_upload(uuid)
            return True
        if event == states.ACTIVATE:
            bitstreams.finish_upload(uuid, 'U', 3, 'a' * 64, 'file', 'loc')
            return True
    except exception.BitstreamBadState:
        return False
    return bitstreams.fail_upload(uuid, 'U', 'reason')


@pytest.mark.parametrize('state,event', [
    (s, e) for s, e in itertools.product(states.BITSTREAM.states,
                                         states.BITSTREAM.events)])
def test_image_transitions(world, state, event):
    uuid = _image_in(state)
    applied = _apply_image(uuid, event)
    assert applied == states.BITSTREAM.allows(state, event)
    expected = states.BITSTREAM.target(event) if applied else state
    assert bitstreams.get(uuid)['status'] == expected


def test_a_superseded_upload_changes_nothing(world):
    """An upload begun again (a retry after a crash) supersedes the first:
    the first one's end is refused and the image keeps the retry's."""
    uuid = bitstreams.create({'name': 'superseded'})['uuid']
    _image, first = bitstreams.begin_upload(uuid)
    _image, second = bitstreams.begin_upload(uuid)
    with pytest.raises(exception.BitstreamBadState):
        bitstreams.finish_upload(uuid, first, 1, 'b' * 64, 'file', 'old')
    assert not bitstreams.fail_upload(uuid, first, 'late failure')
    done = bitstreams.finish_upload(uuid, second, 2, 'c' * 64, 'file', 'new')
    assert (done['status'], done['location']) == ('active', 'new')
