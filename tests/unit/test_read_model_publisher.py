"""The conductor's announcements of committed generations
(conductor/read_model.py): merged while one is sent, spaced under a
stream of writes, none lost at the end of the stream."""

import threading
import time

from cyborg_like.common import rpc
from cyborg_like.conductor import read_model


class Client:
    def __init__(self):
        self.sent = []
        self.cast_made = threading.Condition()

    def prepare(self, **kwargs):
        return self

    def cast(self, context, method, generations):
        with self.cast_made:
            self.sent.append((time.monotonic(), generations))
            self.cast_made.notify_all()


def _publisher(monkeypatch, spacing):
    client = Client()
    monkeypatch.setattr(rpc, 'get_client', lambda target: client)
    publisher = read_model.Publisher(spacing)
    publisher.start()
    return publisher, client


def _settled(client, last):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if client.sent and client.sent[-1][1] == last:
            return
        time.sleep(0.01)
    raise AssertionError('%s never announced: %s' % (last, client.sent))


def test_a_stream_of_writes_is_a_few_announcements(monkeypatch):
    publisher, client = _publisher(monkeypatch, spacing=0.1)
    try:
        # Writes keep coming while casts go out: a batch of commits, then
        # the next cast (an event of the client, not a sleep), BATCHES
        # times over.
        batches, generation = 5, 0
        for _ in range(batches):
            seen = len(client.sent)
            for _ in range(10):
                generation += 1
                publisher.changed({'arqs': generation})
            _cast_after(client, seen)
        _settled(client, {'arqs': generation})
        # Merged: one cast per batch (the first batch's first commit may
        # go alone), the last holding the highest generation; spaced by
        # at least the spacing (a busy machine only stretches the gaps).
        assert len(client.sent) <= batches + 1, client.sent
        gaps = [b[0] - a[0] for a, b in zip(client.sent, client.sent[1:])]
        assert min(gaps) >= 0.09, gaps
    finally:
        publisher.stop()


def _cast_after(client, count, timeout=5):
    """Until more than ``count`` casts were sent (a ceiling)."""
    with client.cast_made:
        assert client.cast_made.wait_for(lambda: len(client.sent) > count,
                                         timeout), client.sent


def test_without_spacing_each_commit_is_announced(monkeypatch):
    publisher, client = _publisher(monkeypatch, spacing=0)
    try:
        for generation in range(1, 6):
            publisher.changed({'devices': generation})
            _settled(client, {'devices': generation})
        assert [g for _, g in client.sent] == [
            {'devices': n} for n in range(1, 6)]
    finally:
        publisher.stop()


def test_families_merge_to_their_highest(monkeypatch):
    publisher, client = _publisher(monkeypatch, spacing=0.2)
    try:
        publisher.changed({'arqs': 1})
        _settled(client, {'arqs': 1})
        publisher.changed({'arqs': 3, 'devices': 7})
        publisher.changed({'arqs': 2})
        _settled(client, {'arqs': 3, 'devices': 7})
    finally:
        publisher.stop()
