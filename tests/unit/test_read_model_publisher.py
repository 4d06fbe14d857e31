"""The conductor's announcements of committed generations
(conductor/read_model.py): merged while one is sent, spaced under a
stream of writes, none lost at the end of the stream."""

import time

from cyborg_like.common import rpc
from cyborg_like.conductor import read_model


class Client:
    def __init__(self):
        self.sent = []

    def prepare(self, **kwargs):
        return self

    def cast(self, context, method, generations):
        self.sent.append((time.monotonic(), generations))


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
        started = time.monotonic()
        for generation in range(1, 51):     # 50 commits in ~0.5 s
            publisher.changed({'arqs': generation})
            time.sleep(0.01)
        lasted = time.monotonic() - started
        _settled(client, {'arqs': 50})
        # One cast per spacing at most, however long the stream took here
        # (a loaded machine stretches it), the first at once; the last
        # holds the highest generation.
        assert client.sent[0][0] - started < 0.1
        assert len(client.sent) <= lasted / 0.1 + 3, (lasted, client.sent)
        gaps = [b[0] - a[0] for a, b in zip(client.sent, client.sent[1:])]
        assert min(gaps) >= 0.09
    finally:
        publisher.stop()


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
