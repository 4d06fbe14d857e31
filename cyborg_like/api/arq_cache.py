"""ARQ answers kept by an API process while nothing they show can have
changed (docs/design.md, "The read model").

ARQs are per project and change with every bind, so no copy of their rows
is kept; but a show or list the conductor answered is answered again from
here while
* the generations of ``arqs`` (ARQs and their handles, and the health of
  the devices they hold) and of the copied families (profile names,
  devices, deployables) are those the read model knew current before the
  conductor was asked, and still current (the read model's rules: heard
  of, confirmed within twice ``[api] read_model_check_interval``);
* no write of this process that may change an ARQ (any conductor call but
  a read) started since it was asked (read-your-writes).

So Nova's polling of an instance's ARQs, a dashboard or the CLI showing an
ARQ again cost no RPC round trip, and a bind, by anyone, is seen as soon
as its generation is announced.
"""

import collections
import contextlib
import json
import threading

from cyborg_like.common import context as context_lib
from cyborg_like.common import read_model as contract

# What an ARQ answer shows comes from these families.
DEPENDS = (contract.ARQS, contract.DEVICES, contract.DEPLOYABLES,
           contract.DEVICE_PROFILES)

_Entry = collections.namedtuple('_Entry', 'answer tag epoch')


class ArqCache:

    def __init__(self, model, size):
        self._model = model
        self._size = size
        self._lock = threading.Lock()
        self._entries = collections.OrderedDict()
        # Moves when a write of this process starts and when it ends: an
        # answer asked for before then may not show it.
        self._epoch = 0

    @contextlib.contextmanager
    def writing(self):
        """Around a call that may change an ARQ: what was asked for before
        it ends is not given after it (whatever its outcome: a timeout may
        still have committed)."""
        self._moved()
        try:
            yield
        finally:
            self._moved()

    def get(self, context, uuid, fetch):
        """``fetch()``'s answer for the ARQ ``uuid`` (the conductor's
        ``get_arq``), from here when it can be."""
        scope = context_lib.project_scope(context)
        tag, epoch = self._now()
        kept = self._kept(('arq', uuid), tag, epoch)
        # Kept as the conductor answered some caller: this one must be
        # let see it (the conductor would say it is not found).
        if kept is not None and scope in (None, kept['project_id']):
            return kept
        return self._fetched(('arq', uuid), fetch, tag, epoch)

    def list(self, context, query, fetch):
        """``fetch()``'s answer for a list of ARQs; ``query``: what the list
        was asked for (filters, limit, marker, sort), as JSON."""
        key = ('list', context_lib.project_scope(context),
               json.dumps(query, sort_keys=True))
        tag, epoch = self._now()
        kept = self._kept(key, tag, epoch)
        if kept is not None:
            return kept
        return self._fetched(key, fetch, tag, epoch)

    def _now(self):
        tag = []
        for name in DEPENDS:
            # Not waiting for a snapshot: the call costs less than a wait.
            family = self._model.family(name, wait=False)
            if family is None:
                return None, None
            tag.append(family.generation)
        with self._lock:
            return tuple(tag), self._epoch

    def _kept(self, key, tag, epoch):
        if tag is None or not self._size:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.tag != tag or entry.epoch != epoch:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry.answer

    def _fetched(self, key, fetch, tag, epoch):
        answer = fetch()
        if tag is not None and self._size:
            with self._lock:
                self._entries[key] = _Entry(answer, tag, epoch)
                self._entries.move_to_end(key)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        return answer

    def _moved(self):
        with self._lock:
            self._epoch += 1

