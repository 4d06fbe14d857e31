r"""The state machines of accelerator requests and operations, declared once.

Accelerator requests (ARQs), Cyborg's states::

    Initial --bind--> BindStarted --finish--> Bound
    Unbound --bind-->      \--------fail---> BindFailed
    BindStarted / Bound / BindFailed --unbind--> Unbound

Deleting an ARQ removes its row in one transaction: there is no
"Deleting" state to get stuck in (Cyborg declares one and never enters it).

Catalog images (bitstreams and firmware)::

    queued --upload--> uploading --activate--> active
    failed / uploading --upload--> uploading     (a retried upload)
    uploading --fail--> failed

Each upload names itself (an upload id on the row): a retried upload
supersedes one a conductor or API died in the middle of, whose end then
finds the id changed and changes nothing. An active image never changes.

Operations (long work on a host that clients poll: programming a region,
flashing a device's firmware)::

    pending --start--> running --succeed--> succeeded
    pending / running / cancelling --fail--> failed
    pending / running --cancel--> cancelling --abort--> cancelled

Only driver operations can be cancelled: the conductor asks the host's
agent to stop the playbook, and the agent's report of the stopped run
(or a worker that had not started it yet) applies ``abort``.

The database applies a transition only ``WHERE state IN
machine.sources(event)`` (a conditional UPDATE), so two conductors can never
both move one record; the API names the states an event needs when it
refuses one. Everything is derived from the declarations below.
"""

from automaton import machines


class StateMachine:
    """An automaton FiniteMachine plus the questions the DB layer asks."""

    def __init__(self, name, start, transitions, terminal=()):
        """``transitions``: (event, source states, target state) triples."""
        self.name = name
        self.start = start
        fsm = machines.FiniteMachine()
        for _event, sources, target in transitions:
            for state in (*sources, target):
                if state not in fsm:
                    fsm.add_state(state, terminal=state in terminal)
        for event, sources, target in transitions:
            for source in sources:
                fsm.add_transition(source, target, event)
        fsm.default_start_state = start
        fsm.freeze()
        self._fsm = fsm
        self.states = tuple(fsm.states)
        self.terminal = tuple(terminal)
        self.events = tuple(dict.fromkeys(e for e, _s, _t in transitions))

    def sources(self, event):
        """The states ``event`` may be applied in."""
        return tuple(s for s, e, _t in self._fsm if e == event)

    def target(self, event):
        """The state ``event`` leads to (one per event, by declaration)."""
        for _s, e, target in self._fsm:
            if e == event:
                return target
        raise KeyError('%s has no event %r' % (self.name, event))

    def allows(self, state, event):
        return state in self.sources(event)


# Accelerator requests.
INITIAL = 'Initial'
BIND_STARTED = 'BindStarted'
BOUND = 'Bound'
BIND_FAILED = 'BindFailed'
UNBOUND = 'Unbound'

BIND, FINISH, FAIL, UNBIND = 'bind', 'finish', 'fail', 'unbind'

ARQ = StateMachine('accelerator request', INITIAL, [
    (BIND, (INITIAL, UNBOUND), BIND_STARTED),
    (FINISH, (BIND_STARTED,), BOUND),
    (FAIL, (BIND_STARTED,), BIND_FAILED),
    (UNBIND, (BIND_STARTED, BOUND, BIND_FAILED), UNBOUND),
])

ALL = ARQ.states

# A binding is "resolved" once it ended, either way (Nova waits for this).
RESOLVED = {BOUND: 'completed', BIND_FAILED: 'failed'}

# States in which an ARQ holds (or is getting) a device a VM uses.
HOLDING = (BIND_STARTED, BOUND)


# Operations.
PENDING, RUNNING, SUCCEEDED, FAILED = ('pending', 'running', 'succeeded',
                                       'failed')
CANCELLING, CANCELLED = 'cancelling', 'cancelled'
START, SUCCEED, CANCEL, ABORT = 'start', 'succeed', 'cancel', 'abort'

OPERATION = StateMachine('operation', PENDING, [
    (START, (PENDING,), RUNNING),
    (SUCCEED, (RUNNING,), SUCCEEDED),
    (FAIL, (PENDING, RUNNING, CANCELLING), FAILED),
    (CANCEL, (PENDING, RUNNING), CANCELLING),
    (ABORT, (CANCELLING,), CANCELLED),
], terminal=(SUCCEEDED, FAILED, CANCELLED))

UNFINISHED = (PENDING, RUNNING, CANCELLING)


# Catalog images.
QUEUED, UPLOADING, ACTIVE = 'queued', 'uploading', 'active'
UPLOAD, ACTIVATE = 'upload', 'activate'

BITSTREAM = StateMachine('image', QUEUED, [
    (UPLOAD, (QUEUED, UPLOADING, FAILED), UPLOADING),
    (ACTIVATE, (UPLOADING,), ACTIVE),
    (FAIL, (UPLOADING,), FAILED),
], terminal=(ACTIVE,))
