"""The deadline of the RPC call a thread is serving, checked at commit.

The conductor drops a call whose caller's deadline passed before it
started (common/rpc.py). A call that starts in time but would commit after
the deadline is refused at the commit instead: the caller has already
answered its client 503, so the write must not happen. What is left is the
instant between this check and the database's commit.
"""

import contextlib
import threading
import time

from oslo_log import log as logging

from cyborg_like.common import exception

LOG = logging.getLogger(__name__)
_LOCAL = threading.local()


@contextlib.contextmanager
def serving(context):
    """While this thread serves an RPC call made with ``context``."""
    _LOCAL.context = context
    try:
        yield
    finally:
        _LOCAL.context = None


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
