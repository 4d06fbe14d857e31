"""Tells the API processes that families of their read model changed.

Every committed bump of a family's generation (db/generations.py) is cast
on the read model's fanout topic as ``generations_changed``. Casts are sent
by one thread, never by the writer: a write is never slowed or failed by
the broker. Bumps waiting to be sent are merged (the highest generation per
family), so a burst of writes is one message. A cast that fails is dropped:
the API processes confirm their generations with the conductor every
``[api] read_model_check_interval`` anyway (docs/design.md). After a cast
the thread waits ``[conductor] read_model_announce_spacing`` before the
next: a stream of writes (every ARQ write bumps a generation) is a few
casts a second, not one per commit.
"""

import threading

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.common import context as context_lib
from cyborg_like.common import read_model
from cyborg_like.common import rpc
from cyborg_like.common import worker

LOG = logging.getLogger(__name__)

# Publish retries of one cast while the broker is away; then it is dropped.
CAST_RETRIES = 2


class Publisher:

    def __init__(self, spacing=0.0):
        self._spacing = spacing
        target = messaging.Target(topic=read_model.TOPIC,
                                  version=read_model.VERSION)
        self._client = rpc.get_client(target)
        self._waiting = {}
        self._lock = threading.Lock()
        self._worker = worker.Worker('read-model-publisher', self._run,
                                     join_timeout=10)

    def changed(self, generations):
        """A writer committed these {family: generation}; send soon."""
        with self._lock:
            for family, generation in generations.items():
                if generation > self._waiting.get(family, -1):
                    self._waiting[family] = generation
        self._worker.wake()

    def start(self):
        self._worker.start()

    def stop(self):
        self._worker.stop()

    def _run(self):
        while True:
            self._worker.wait()
            if self._worker.stopping:
                return
            # Cleared before the bumps are taken: one merged from now on
            # is taken by the next round.
            self._worker.clear()
            with self._lock:
                generations, self._waiting = self._waiting, {}
            if not generations:
                continue    # taken by the round its wake-up began
            self._send(generations)
            if self._spacing:
                self._worker.pause(self._spacing)

    def _send(self, generations):
        try:
            self._client.prepare(fanout=True, retry=CAST_RETRIES).cast(
                context_lib.get_admin_context(), 'generations_changed',
                generations=generations)
        except Exception as error:
            LOG.warning('Could not announce the read model generations %s '
                        '(the API processes find them at their next '
                        'check): %s', generations, error)
