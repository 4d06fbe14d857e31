r"""The accelerator request state machine, in one place (Cyborg's states).

    Initial --bind--> BindStarted --> Bound
                           |  \----> BindFailed
    Bound / BindFailed / BindStarted --unbind--> Unbound --bind--> ...
    any --delete--> (gone)

``TRANSITIONS`` maps each state to the states it may be entered from; the
database applies a transition only ``WHERE state IN (those)``, so two
conductors can never both move one request.
"""

INITIAL = 'Initial'
BIND_STARTED = 'BindStarted'
BOUND = 'Bound'
BIND_FAILED = 'BindFailed'
UNBOUND = 'Unbound'
DELETING = 'Deleting'

ALL = (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBOUND, DELETING)

TRANSITIONS = {
    BIND_STARTED: (INITIAL, UNBOUND),
    BOUND: (BIND_STARTED,),
    BIND_FAILED: (BIND_STARTED,),
    UNBOUND: (BIND_STARTED, BOUND, BIND_FAILED),
    DELETING: (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBOUND),
}

# A binding is "resolved" once it ended, either way (Nova waits for this).
RESOLVED = {BOUND: 'completed', BIND_FAILED: 'failed', DELETING: 'failed'}
