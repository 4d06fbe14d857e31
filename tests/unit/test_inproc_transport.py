"""The in-process transport: oslo.messaging's fake driver whose listeners a
delivery wakes (they looked every 50 ms), under oslo.messaging's own RPC
server and client."""

import threading

import oslo_messaging as messaging
import pytest

from cyborg_like.common import inproc_transport
from cyborg_like.conf import CONF

# Longer than any test waits: a listener that was not woken would still
# be asleep when its test gives up.
NEVER = 600


@pytest.fixture
def transport(monkeypatch):
    monkeypatch.setattr(inproc_transport, '_LONGEST_WAIT', NEVER)
    transport = messaging.get_rpc_transport(CONF, url='inproc:/')
    try:
        yield transport
    finally:
        transport.cleanup()


class Echo:
    target = messaging.Target(version='1.0')

    def echo(self, context, value):
        return value


def test_a_call_is_answered_by_a_server_the_delivery_woke(transport):
    target = messaging.Target(topic='inproc-test', server='s1')
    server = messaging.get_rpc_server(transport, target, [Echo()])
    server.start()
    try:
        client = messaging.get_rpc_client(
            transport, messaging.Target(topic='inproc-test'), timeout=30)
        # The server's listener was asleep (NEVER) when each call came.
        assert [client.call({}, 'echo', value=i) for i in range(3)] == \
            [0, 1, 2]
        assert client.prepare(server='s1').call({}, 'echo', value='x') == 'x'
    finally:
        server.stop()
        server.wait()


def test_stop_wakes_a_waiting_listener(transport):
    driver = transport._driver
    listener = driver.listen(messaging.Target(topic='quiet', server='s1'),
                             1, None)._poll_style_listener
    polled = []
    poller = threading.Thread(
        target=lambda: polled.append(listener.poll(timeout=NEVER)))
    poller.start()
    listener.stop()
    poller.join(30)
    assert not poller.is_alive()
    assert polled == [[]]


def test_its_exchanges_are_not_the_fake_drivers(transport):
    fake = messaging.get_rpc_transport(CONF, url='fake:/')
    try:
        inproc_exchange = transport._driver._exchange_manager.get_exchange(
            'cyborg_like')
        fake_exchange = fake._driver._exchange_manager.get_exchange(
            'cyborg_like')
        assert inproc_exchange is not fake_exchange
        assert isinstance(inproc_exchange, inproc_transport._Exchange)
    finally:
        fake.cleanup()
