"""A small TCP proxy for fault injection: loopback only, threaded, bounded.

It forwards connections made to 127.0.0.1:<port> to one upstream address
(RabbitMQ, MariaDB, PostgreSQL) and can cut the path:

* ``cut('reset')``: what a broker or database that went away looks like.
  Every open connection is closed (the peers see a reset or EOF) and new
  ones are refused: the listening socket is closed.
* ``cut('blackhole')``: what a silent network partition looks like. Open
  connections stay open but nothing more is forwarded either way; new
  connections are accepted and then ignored.

``restore()`` forwards again on the same port (connections held by a
blackhole are closed then: the peers have given up on them anyway).
``restore(strand=True)`` forwards new connections but leaves those open
during the blackhole silent for ever: what a client sees of connections
its server dropped during a partition while the client only waited for an
answer (nothing of its own unacknowledged, so its TCP stack never notices).
"""

import contextlib
import select
import socket
import threading

LOOPBACK = '127.0.0.1'
CHUNK = 65536
# Every thread polls its stop flags this often.
POLL_INTERVAL = 0.1
MODES = ('reset', 'blackhole')


class TcpProxy:
    def __init__(self, upstream_host, upstream_port, max_connections=128):
        self.upstream = (upstream_host, upstream_port)
        self.max_connections = max_connections
        self.port = None
        self.mode = None            # None (forwarding) or one of MODES
        self._listener = None
        self._accepter = None
        self._pairs = set()         # (client socket, upstream socket)
        self._held = set()          # sockets accepted during a blackhole
        self._stranded = set()      # pairs silent for ever (restore)
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    @property
    def address(self):
        return LOOPBACK, self.port

    # -- lifecycle

    def start(self):
        self._stopped.clear()
        self._listen()
        return self

    def stop(self):
        self._stopped.set()
        self._close_listener()
        self._close_all()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def cut(self, mode='reset'):
        assert mode in MODES, mode
        with self._lock:
            self.mode = mode
        if mode == 'reset':
            self._close_listener()
            self._close_all()

    def restore(self, strand=False):
        with self._lock:
            was, self.mode = self.mode, None
            if strand:
                self._stranded.update(self._pairs)
        if was == 'blackhole' and not strand:
            self._close_all()
        if self._listener is None:
            self._listen()

    def connection_count(self):
        with self._lock:
            return len(self._pairs) + len(self._held)

    # -- internals

    def _listen(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, self.port or 0))
        listener.listen(64)
        listener.settimeout(POLL_INTERVAL)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._accepter = threading.Thread(
            target=self._accept_loop, args=(listener,),
            name='tcpproxy-accept-%d' % self.port, daemon=True)
        self._accepter.start()

    def _close_listener(self):
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        if self._accepter is not None:
            self._accepter.join(5)
            self._accepter = None

    def _accept_loop(self, listener):
        while not self._stopped.is_set() and self._listener is listener:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return                      # closed by a cut or stop
            self._take(client)

    def _take(self, client):
        with self._lock:
            full = (len(self._pairs) + len(self._held)
                    >= self.max_connections)
            if self.mode == 'blackhole' and not full:
                self._held.add(client)
                return
        if full or self.mode is not None:
            client.close()
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        pair = (client, upstream)
        with self._lock:
            self._pairs.add(pair)
        threading.Thread(target=self._pump, args=(pair,),
                         name='tcpproxy-pump', daemon=True).start()

    def _pump(self, pair):
        """Forwards both ways until either side closes or a cut closes
        the pair; forwards nothing while blackholed."""
        client, upstream = pair
        other = {client: upstream, upstream: client}
        try:
            while not self._stopped.is_set():
                if self.mode == 'blackhole' or pair in self._stranded:
                    self._stopped.wait(POLL_INTERVAL)
                    continue
                readable, _, _ = select.select(list(other), [], [],
                                               POLL_INTERVAL)
                for sock in readable:
                    data = sock.recv(CHUNK)
                    if not data:
                        return
                    other[sock].sendall(data)
        except (OSError, ValueError):
            return                      # closed under us by a cut
        finally:
            self._close_pair(pair)

    def _close_pair(self, pair):
        with self._lock:
            self._pairs.discard(pair)
            self._stranded.discard(pair)
        for sock in pair:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _close_all(self):
        with self._lock:
            pairs, self._pairs = list(self._pairs), set()
            held, self._held = list(self._held), set()
        for pair in pairs:
            self._close_pair(pair)
        for sock in held:
            sock.close()
