"""The deadline of the RPC call a thread is serving, checked at commit.

The conductor drops a call whose caller's deadline passed before it
started (common/rpc.py). A call that starts in time but would commit after
the deadline is refused at the commit instead: the caller has already
answered its client 503, so the write must not happen. The API answers a
write that got no answer with 503 only once the deadline and ``[DEFAULT]
rpc_commit_margin`` have passed (rpc.call_within's settle); what is left
is a commit slower than that margin, which ``committed`` logs as an error
naming the request.
"""

import contextlib
import dataclasses
import threading
import time

from oslo_log import log as logging

from cyborg_like.common import exception
from cyborg_like.conf import CONF

LOG = logging.getLogger(__name__)
_LOCAL = threading.local()


@dataclasses.dataclass
class Call:
    """The RPC call a thread serves: what the change log records of it
    (db/change_recorder.py keeps its row's id here between its
    transactions)."""

    context: object
    method: str | None = None
    kwargs: dict = dataclasses.field(default_factory=dict)
    change_id: int | None = None


@contextlib.contextmanager
def serving(context, method=None, kwargs=None):
    """While this thread serves the RPC call ``method`` made with
    ``context``."""
    _LOCAL.context = context
    _LOCAL.call = Call(context, method, kwargs or {})
    try:
        yield
    finally:
        _LOCAL.context = None
        _LOCAL.call = None


def served():
    """The Call this thread serves, or None."""
    return getattr(_LOCAL, 'call', None)


def check():
    """Raise RequestDeadlinePassed if the call being served is late."""
    context = getattr(_LOCAL, 'context', None)
    deadline = getattr(context, 'deadline', None)
    if deadline is None:
        return
    late = time.time() - deadline
    if late > 0:
        LOG.warning('Rolled back the write of request %s: its caller '
                    'stopped waiting %.1fs ago', context.request_id, late)
        raise exception.RequestDeadlinePassed(
            request_id=context.request_id, late=late)


def committed():
    """After a commit of the call being served: log an error if it landed
    later than its caller's deadline and the margin its caller waits, so
    that a write its caller may have answered 503 for is not a silent
    one."""
    context = getattr(_LOCAL, 'context', None)
    deadline = getattr(context, 'deadline', None)
    if deadline is None:
        return
    late = time.time() - deadline - CONF.rpc_commit_margin
    if late > 0:
        LOG.error('Committed a write of request %s %.1fs after its caller '
                  'stopped waiting ([DEFAULT] rpc_commit_margin past its '
                  'deadline): its client may have been answered 503 for a '
                  'write that was done', context.request_id, late)
