"""The in-process message transport (``transport_url = inproc://``): the
all-in-one's, and the functional tests' in-process clouds'.

It is oslo.messaging's fake driver, whose listeners look at their queues
every 50 ms: a call waited 25 ms on average before its server noticed it
(the all-in-one answered 4,900 schemathesis requests in 100 s, 43 s of them
spent so). Here every delivery wakes the listeners at once. Registered
under ``oslo.messaging.drivers`` in setup.cfg.
"""

import threading
import time

import oslo_messaging
from oslo_messaging._drivers import base
from oslo_messaging._drivers import impl_fake

# One condition for every exchange: a listener may listen on several, and
# a delivery is cheap to miss-wake for the few listeners of a process.
_DELIVERED = threading.Condition()
_deliveries = 0
# Listeners still look now and then: a stop() sets an event they also
# check, and nothing is lost if a wake-up ever were.
_LONGEST_WAIT = 0.5


def _wake_listeners():
    global _deliveries
    with _DELIVERED:
        _deliveries += 1
        _DELIVERED.notify_all()


class _Exchange(impl_fake.FakeExchange):

    def deliver_message(self, *args, **kwargs):
        super().deliver_message(*args, **kwargs)
        _wake_listeners()


class _ExchangeManager(impl_fake.FakeExchangeManager):
    # The process's exchanges of this transport, apart from fake://'s.
    _exchanges_lock = threading.Lock()
    _exchanges = {}

    def get_exchange(self, name):
        if name is None:
            name = self._default_exchange
        with self._exchanges_lock:
            if name not in self._exchanges:
                self._exchanges[name] = _Exchange(name)
            return self._exchanges[name]


class _Listener(impl_fake.FakeListener):

    @base.batch_poll_helper
    def poll(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._stopped.is_set():
            # Read before looking, so that a delivery after the look is
            # seen as a change and not waited out.
            seen = _deliveries
            message = self._take_one()
            if message is not None:
                return message
            wait = _LONGEST_WAIT
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    return None
            with _DELIVERED:
                if _deliveries == seen:
                    _DELIVERED.wait(wait)
        return None

    def _take_one(self):
        for target in self._targets:
            exchange = self._exchange_manager.get_exchange(target.exchange)
            ctxt, message, reply_q, requeue = exchange.poll(target,
                                                            self._pool)
            if message is not None:
                return impl_fake.FakeIncomingMessage(ctxt, message, reply_q,
                                                     requeue)
        return None

    def stop(self):
        super().stop()
        _wake_listeners()


class InProcessDriver(impl_fake.FakeDriver):
    """The fake driver, with listeners a delivery wakes."""

    def __init__(self, conf, url, default_exchange=None,
                 allowed_remote_exmods=None):
        super().__init__(conf, url, default_exchange, allowed_remote_exmods)
        self._exchange_manager = _ExchangeManager(default_exchange)

    def listen(self, target, batch_size, batch_timeout):
        exchange = target.exchange or self._default_exchange
        return self._adapter(
            [_target(target.topic, exchange, server=target.server),
             _target(target.topic, exchange)], None,
            batch_size, batch_timeout)

    def listen_for_notifications(self, targets_and_priorities, pool,
                                 batch_size, batch_timeout):
        return self._adapter(
            [_target('%s.%s' % (target.topic, priority), target.exchange)
             for target, priority in targets_and_priorities], pool,
            batch_size, batch_timeout)

    def _adapter(self, targets, pool, batch_size, batch_timeout):
        listener = _Listener(self._exchange_manager, targets, pool)
        return base.PollStyleListenerAdapter(listener, batch_size,
                                             batch_timeout)


def _target(topic, exchange, server=None):
    return oslo_messaging.Target(topic=topic, exchange=exchange,
                                 server=server)
