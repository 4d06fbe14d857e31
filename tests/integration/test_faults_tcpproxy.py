"""The fault proxy itself, in front of the real RabbitMQ: it forwards, a
reset cut refuses and closes, a blackhole holds without forwarding, and a
restore forwards again on the same port."""

import socket
import time

import pytest

from .infra import RABBIT_HOST
from .infra import RABBIT_PORT
from .tcpproxy import TcpProxy

pytestmark = pytest.mark.integration

AMQP_HEADER = b'AMQP\x00\x00\x09\x01'


def _greeting(address, timeout=3.0):
    """The first bytes RabbitMQ answers to an AMQP 0-9-1 header."""
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(AMQP_HEADER)
        return sock.recv(7)


def test_forwards_cuts_and_restores():
    with TcpProxy(RABBIT_HOST, RABBIT_PORT) as proxy:
        # A method frame (type 1) on channel 0: Connection.Start.
        assert _greeting(proxy.address)[:1] == b'\x01'
        open_conn = socket.create_connection(proxy.address, timeout=3)
        open_conn.sendall(AMQP_HEADER)
        assert open_conn.recv(7)[:1] == b'\x01'
        port = proxy.port

        proxy.cut('reset')
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(proxy.address, timeout=3)
        open_conn.close()
        assert proxy.connection_count() == 0

        proxy.restore()
        assert proxy.port == port
        assert _greeting(proxy.address)[:1] == b'\x01'

        proxy.cut('blackhole')
        started = time.monotonic()
        with pytest.raises(socket.timeout):
            _greeting(proxy.address, timeout=1.0)
        assert time.monotonic() - started >= 0.9
        proxy.restore()
        assert _greeting(proxy.address)[:1] == b'\x01'


def test_a_reset_closes_open_connections():
    with TcpProxy(RABBIT_HOST, RABBIT_PORT) as proxy:
        conn = socket.create_connection(proxy.address, timeout=3)
        conn.sendall(AMQP_HEADER)
        conn.recv(4096)
        proxy.cut('reset')
        conn.settimeout(3)
        # EOF or a reset: either way the peer learns the path is gone.
        try:
            data = conn.recv(4096)
        except ConnectionResetError:
            data = b''
        assert data == b''
        conn.close()


def test_connections_beyond_the_bound_are_closed():
    with TcpProxy(RABBIT_HOST, RABBIT_PORT, max_connections=2) as proxy:
        kept = [socket.create_connection(proxy.address, timeout=3)
                for _ in range(2)]
        for sock in kept:
            sock.sendall(AMQP_HEADER)
            sock.recv(7)
        extra = socket.create_connection(proxy.address, timeout=3)
        extra.sendall(AMQP_HEADER)
        try:
            assert extra.recv(7) == b''
        except ConnectionResetError:
            pass
        for sock in kept + [extra]:
            sock.close()


def test_a_stranding_restore_keeps_old_connections_silent():
    with TcpProxy(RABBIT_HOST, RABBIT_PORT) as proxy:
        old = socket.create_connection(proxy.address, timeout=3)
        old.sendall(AMQP_HEADER)
        assert old.recv(7)[:1] == b'\x01'     # forwarded before the cut
        old.settimeout(0.5)
        with pytest.raises(socket.timeout):   # the rest of the greeting
            while old.recv(65536):
                pass
        proxy.cut('blackhole')
        proxy.restore(strand=True)
        # New connections are forwarded, the one open before is not.
        assert _greeting(proxy.address)[:1] == b'\x01'
        old.sendall(AMQP_HEADER)
        old.settimeout(1.0)
        with pytest.raises(socket.timeout):
            old.recv(7)
        old.close()
