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
        self._changed = threading.Condition()
        self._stopping = False
        self._thread = None

    def changed(self, generations):
        """A writer committed these {family: generation}; send soon."""
        with self._changed:
            for family, generation in generations.items():
                if generation > self._waiting.get(family, -1):
                    self._waiting[family] = generation
            self._changed.notify()

    def start(self):
        self._stopping = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='read-model-publisher')
        self._thread.start()

    def stop(self):
        with self._changed:
            self._stopping = True
            self._changed.notify()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _run(self):
        while True:
            with self._changed:
                while not self._waiting and not self._stopping:
                    self._changed.wait()
                if self._stopping:
                    return
                generations, self._waiting = self._waiting, {}
            self._send(generations)
            if self._spacing:
                with self._changed:
                    self._changed.wait_for(lambda: self._stopping,
                                           self._spacing)

    def _send(self, generations):
        try:
            self._client.prepare(fanout=True, retry=CAST_RETRIES).cast(
                context_lib.get_admin_context(), 'generations_changed',
                generations=generations)
        except Exception as error:
            LOG.warning('Could not announce the read model generations %s '
                        '(the API processes find them at their next '
                        'check): %s', generations, error)
