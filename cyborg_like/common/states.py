r"""The state machines of accelerator requests and operations, declared once.

Accelerator requests (ARQs), Cyborg's states::

    Initial --bind--> BindStarted --finish--> Bound
    Unbound --bind-->      \--------fail---> BindFailed
    BindStarted / Bound / BindFailed --unbind--> Unbound

Deleting an ARQ removes its row in one transaction: there is no
"Deleting" state to get stuck in (Cyborg declares one and never enters it).

Devices in service, as their health readings move them (db/health.py)::

    serving --drain--> drained            (unhealthy; not bindable,
    flagged --drain--> drained             Placement inventory reserved)
    serving --flag--> flagged             (unhealthy, but the drain circuit
                                           breaker is open: still bindable)
    drained / flagged --recover--> serving  ([health] recovery_checks
                                             healthy readings in a row)

An operator's status (enabled, maintaining) is apart from this: recovery
never enables a device an operator took out of service.

Catalog images (bitstreams and firmware)::

    queued --upload--> uploading --activate--> active
    failed / uploading --upload--> uploading     (a retried upload)
    uploading --fail--> failed

Each upload names itself (an upload id on the row): a retried upload
supersedes one a conductor or API died in the middle of, whose end then
finds the id changed and changes nothing. An active image never changes.

Operations (long work on a host that clients poll: programming a region,
flashing a device's firmware, cutting a GPU into MIG devices, a driver
operation)::

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


# Devices in service.
SERVING, DRAINED, FLAGGED = 'serving', 'drained', 'flagged'
DRAIN, FLAG, RECOVER = 'drain', 'flag', 'recover'

DEVICE_SERVICE = StateMachine('device service', SERVING, [
    (DRAIN, (SERVING, FLAGGED), DRAINED),
    (FLAG, (SERVING,), FLAGGED),
    (RECOVER, (DRAINED, FLAGGED), SERVING),
])


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


# Device leases (db/leases.py, docs/leases.md). A lease is in effect until
# it is given back by its lessee, revoked by the lessor or has no window
# left; each of its windows (one occurrence of its recurrence) moves on as
# the conductors' lease periodic finds its boundaries passed::
#
#     active --give_back--> returned
#     active --revoke--> revoked
#     active --expire--> expired
#
#     scheduled --open--> open --notify--> noticed
#     scheduled / open / noticed --close--> closed    (the lessee's ARQs on
#                                                      the devices unbound)
#     scheduled / open / noticed --cancel--> cancelled (the lease ended)
LEASE_ACTIVE, RETURNED, REVOKED, EXPIRED = ('active', 'returned', 'revoked',
                                            'expired')
GIVE_BACK, REVOKE, EXPIRE = 'give_back', 'revoke', 'expire'

LEASE = StateMachine('lease', LEASE_ACTIVE, [
    (GIVE_BACK, (LEASE_ACTIVE,), RETURNED),
    (REVOKE, (LEASE_ACTIVE,), REVOKED),
    (EXPIRE, (LEASE_ACTIVE,), EXPIRED),
], terminal=(RETURNED, REVOKED, EXPIRED))

WINDOW_SCHEDULED, WINDOW_OPEN, WINDOW_NOTICED, WINDOW_CLOSED = (
    'scheduled', 'open', 'noticed', 'closed')
WINDOW_CANCELLED = 'cancelled'
OPEN, NOTIFY, CLOSE = 'open', 'notify', 'close'

LEASE_WINDOW = StateMachine('lease window', WINDOW_SCHEDULED, [
    (OPEN, (WINDOW_SCHEDULED,), WINDOW_OPEN),
    (NOTIFY, (WINDOW_OPEN,), WINDOW_NOTICED),
    (CLOSE, (WINDOW_SCHEDULED, WINDOW_OPEN, WINDOW_NOTICED), WINDOW_CLOSED),
    (CANCEL, (WINDOW_SCHEDULED, WINDOW_OPEN, WINDOW_NOTICED),
     WINDOW_CANCELLED),
], terminal=(WINDOW_CLOSED, WINDOW_CANCELLED))

# Windows holding their devices (reserved in Placement, counted reserved
# by the availability feed).
HOLDING_WINDOWS = (WINDOW_OPEN, WINDOW_NOTICED)


# Fleet rollouts (db/rollouts.py, conductor/rollouts.py, docs/rollouts.md).
# A rollout is carried by one conductor (its owner) through its waves; a
# rollout whose owner stops heartbeating is taken over by another::
#
#     running --pause--> paused --resume--> running
#     running / paused --succeed--> succeeded
#     running / paused --stop--> rolling_back --finish_rollback--> failed
#     running / paused / rolling_back --abort--> aborted
#     succeeded / failed / aborted --rollback--> manual_rollback
#     manual_rollback --finish_manual_rollback--> rolled_back
#
# A dry run is never stored: it answers the waves the rollout would have.
ROLLOUT_RUNNING, ROLLOUT_PAUSED, ROLLOUT_SUCCEEDED = ('running', 'paused',
                                                     'succeeded')
ROLLOUT_FAILED, ROLLOUT_ABORTED = 'failed', 'aborted'
ROLLING_BACK, ROLLED_BACK = 'rolling_back', 'rolled_back'
MANUAL_ROLLBACK = 'manual_rollback'
PAUSE, RESUME, ROLLBACK, FINISH_ROLLBACK, FINISH_MANUAL_ROLLBACK = (
    'pause', 'resume', 'rollback', 'finish_rollback',
    'finish_manual_rollback')
STOP = 'stop'

ROLLOUT = StateMachine('rollout', ROLLOUT_RUNNING, [
    (PAUSE, (ROLLOUT_RUNNING,), ROLLOUT_PAUSED),
    (RESUME, (ROLLOUT_PAUSED,), ROLLOUT_RUNNING),
    (SUCCEED, (ROLLOUT_RUNNING, ROLLOUT_PAUSED), ROLLOUT_SUCCEEDED),
    # The failure budget or a canary failed: the changed targets go back.
    (STOP, (ROLLOUT_RUNNING, ROLLOUT_PAUSED), ROLLING_BACK),
    (FINISH_ROLLBACK, (ROLLING_BACK,), ROLLOUT_FAILED),
    (ABORT, (ROLLOUT_RUNNING, ROLLOUT_PAUSED, ROLLING_BACK),
     ROLLOUT_ABORTED),
    # An operator's rollback of a finished rollout.
    (ROLLBACK, (ROLLOUT_SUCCEEDED, ROLLOUT_FAILED, ROLLOUT_ABORTED),
     MANUAL_ROLLBACK),
    (FINISH_MANUAL_ROLLBACK, (MANUAL_ROLLBACK,), ROLLED_BACK),
], terminal=(ROLLED_BACK,))

# The states a rollout ends in (a manual rollback may still follow).
ROLLOUT_ENDED = (ROLLOUT_SUCCEEDED, ROLLOUT_FAILED, ROLLOUT_ABORTED,
                 ROLLED_BACK)

# The states a conductor drives (owns) a rollout in.
ROLLOUT_ACTIVE = (ROLLOUT_RUNNING, ROLLING_BACK, MANUAL_ROLLBACK)

# Each target of a rollout (a region, a device or a host)::
#
#     pending / skipped_busy --begin--> in_progress --finish--> gating
#     pending --skip_busy--> skipped_busy    (a workload holds it)
#     gating --pass--> done
#     in_progress / gating --fail--> failed
#     in_progress --retry--> pending         (its conductor died mid-way)
#     gating --cut_short--> unverified       (its rollout was aborted)
#     done / gating / unverified / failed --revert--> rolling_back
#     rolling_back --reverted--> rolled_back
#     done / gating / unverified / failed --nothing_to_restore-->
#         rolled_back                    (nothing was on it before)
#     rolling_back --fail--> failed          (its rollback failed too)
TARGET_PENDING, SKIPPED_BUSY, IN_PROGRESS, GATING, DONE = (
    'pending', 'skipped_busy', 'in_progress', 'gating', 'done')
# Changed, but its gate never finished: the rollout was aborted while it
# (or its operation, ending after the abort) was gating.
UNVERIFIED, CUT_SHORT = 'unverified', 'cut_short'
TARGET_FAILED, TARGET_ROLLING_BACK, TARGET_ROLLED_BACK = (
    'failed', 'rolling_back', 'rolled_back')
BEGIN, SKIP_BUSY, PASS, REVERT, REVERTED = ('begin', 'skip_busy', 'pass',
                                            'revert', 'reverted')
RETRY = 'retry'
NOTHING_TO_RESTORE = 'nothing_to_restore'

ROLLOUT_TARGET = StateMachine('rollout target', TARGET_PENDING, [
    (BEGIN, (TARGET_PENDING, SKIPPED_BUSY), IN_PROGRESS),
    (SKIP_BUSY, (TARGET_PENDING,), SKIPPED_BUSY),
    (FINISH, (IN_PROGRESS,), GATING),
    (PASS, (GATING,), DONE),
    (CUT_SHORT, (GATING,), UNVERIFIED),
    (FAIL, (IN_PROGRESS, GATING, TARGET_ROLLING_BACK), TARGET_FAILED),
    (RETRY, (IN_PROGRESS,), TARGET_PENDING),
    (REVERT, (DONE, GATING, UNVERIFIED, TARGET_FAILED),
     TARGET_ROLLING_BACK),
    (REVERTED, (TARGET_ROLLING_BACK,), TARGET_ROLLED_BACK),
    # A region or card that held nothing before its change: no erase
    # operation exists, so its rollback only records it.
    (NOTHING_TO_RESTORE, (DONE, GATING, UNVERIFIED, TARGET_FAILED),
     TARGET_ROLLED_BACK),
], terminal=(TARGET_ROLLED_BACK,))
