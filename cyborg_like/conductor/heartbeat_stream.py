"""Regular heartbeats taken off the heartbeat stream, in batches.

Agents publish their regular beats on the stream's topic
(common/heartbeat_stream.py). Every conductor listens on its one queue, so
the broker shares the beats out among them; a listener gets them in batches
of up to ``[conductor] heartbeat_batch_size`` and hands each beat to the
heartbeat collector (conductor/heartbeats.py), which writes them with its
next flush as it writes called beats. A beat past its deadline (it waited
in the queue while no conductor could take it) is dropped and counted:
its agent has sent a newer one since.
"""

import time

from oslo_log import log as logging

from cyborg_like.common import context as context_lib
from cyborg_like.common import heartbeat_stream
from cyborg_like.common import rpc
from cyborg_like.conductor import metrics

LOG = logging.getLogger(__name__)


class HeartbeatStream:
    def __init__(self, conf, collector):
        self._listener = rpc.get_stream_listener(
            heartbeat_stream.TOPIC, _Endpoint(collector),
            conf.conductor.heartbeat_batch_size,
            conf.conductor.heartbeat_batch_timeout)

    def start(self):
        self._listener.start()

    def stop(self):
        self._listener.stop()
        self._listener.wait()


class _Endpoint:
    """The listener's endpoint: one method per priority the stream uses."""

    def __init__(self, collector):
        self._collector = collector

    def info(self, messages):
        now = time.time()
        beats = [m['payload'] for m in messages
                 if m['event_type'] == heartbeat_stream.EVENT_TYPE]
        fresh = [b for b in beats if not heartbeat_stream.expired(b, now)]
        if fresh:
            self._collector.add_many(context_lib.get_admin_context(), fresh)
        expired = len(beats) - len(fresh)
        if expired:
            metrics.heartbeats_expired(expired)
            LOG.warning('Dropped %d heartbeat(s) that waited in the '
                        'heartbeat stream past their deadline (their '
                        'agents have sent newer ones); took %d', expired,
                        len(fresh))
