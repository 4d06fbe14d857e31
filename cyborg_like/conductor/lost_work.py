"""Work this conductor accepted but carries in no job any more.

A binding or an operation is written, then handed to a worker job that
carries it to its end (conductor/workqueue.py; the job says what it
carries: a binding's attempt, an operation's uuid). A database or
message bus error can leave one carried by nobody while this conductor
lives on: a rollout's target begun in a transaction whose COMMIT lost its
connection (committed, yet the step saw an error and started no job), or
a job whose last write failed. The liveness sweep only fails the work of
conductors that stopped, so such work, and a rollout target waiting on
it, would wait for the age limit (twice ``agent_timeout``). Seen in
tests/cluster: a Galera writer killed under a rollout, which then never
ended.

Each sweep, the unfinished work of this conductor that no job carries is
suspect; what is still suspect at the next sweep is failed as lost
(an operation: ``operations.LOST``, which a rollout treats as an
interruption and begins its target again; a binding: BindFailed, its
handle given back, Nova told). Two sweeps, because a job is handed its
work just after the COMMIT that wrote it, and a sweep may fall between.
"""


class LostWork:
    def __init__(self, workers, unfinished, fail):
        """``unfinished()``: the keys (as jobs carry them) of this
        conductor's unfinished work of one kind; ``fail(keys)``: fail
        those still unfinished (and say so in the log)."""
        self._workers = workers
        self._unfinished = unfinished
        self._fail = fail
        self._suspects = frozenset()

    def sweep(self):
        """Fail the work found carried by no job twice running; returns
        what ``fail`` answers."""
        unfinished = self._unfinished()
        # Read after the rows: a job that ended meanwhile wrote its end,
        # which the conditional failure does not undo.
        lost = unfinished - self._workers.carried()
        confirmed = lost & self._suspects
        self._suspects = lost - confirmed
        return self._fail(sorted(confirmed)) if confirmed else []
