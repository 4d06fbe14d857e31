"""RPC plumbing: one transport per process, context-carrying serializer.

``init`` is called once by each console script. With ``transport_url =
inproc://`` (common/inproc_transport.py) every RPC server and client of the
process share one in-memory transport, which is how the all-in-one runs
without a broker.
"""

import concurrent.futures
import contextlib
import copy
import inspect
import threading
import time
import uuid

from kombu import exceptions as kombu_exceptions
import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_messaging import opts as messaging_opts

from cyborg_like.common import context as ctx
from cyborg_like.common import deadlines
from cyborg_like.common import exception
from cyborg_like.conf import CONF

TRANSPORT = None
NOTIFICATION_TRANSPORT = None
# Streams (the heartbeat stream) run on the RPC broker, as notifications.
STREAM_TRANSPORT = None

ALLOWED_EXMODS = [exception.__name__]

LOG = logging.getLogger(__name__)

# Bounded calls (call_within) each run on a thread of their own, so their
# caller's wait is bounded by the clock whatever the driver does (makes its
# reply queue during an outage, waits for a connection's lock held by a
# reconnect). A call its caller gave up on keeps its thread until its
# publish retries and reply wait end; at most this many at once per process.
MAX_CALLS_IN_FLIGHT = 64
_IN_FLIGHT = threading.BoundedSemaphore(MAX_CALLS_IN_FLIGHT)


class RequestContextSerializer(messaging.NoOpSerializer):
    """Sends the request context with every message; payloads are JSON."""

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return ctx.RequestContext.from_dict(context)


# Messages a consumer holds unacknowledged, at most (oslo.messaging's
# [oslo_messaging_rabbit] rabbit_qos_prefetch_count, 0 = unlimited, is given
# this default). A heartbeat stream listener acknowledges a batch once the
# collector took it: the rest of a backlog waits on the broker, where the
# stream's policy drops what outlived its deadline and any conductor may
# take it, instead of ageing in one conductor's socket. An RPC server
# acknowledges a call when one of its threads takes it up, so only one
# with more than this many calls waiting for a thread is held: the rest
# wait on the broker for it or another conductor (and a call's expiry
# applies there).
PREFETCH = 500


def register_opts(conf):
    """Register oslo.messaging's options now rather than when the transport
    is made, so defaults (the all-in-one's transport_url) can be set first.
    """
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=group)
    conf.set_default('rabbit_qos_prefetch_count', PREFETCH,
                     group='oslo_messaging_rabbit')


def init(conf):
    global TRANSPORT
    if TRANSPORT is None:
        TRANSPORT = messaging.get_rpc_transport(
            conf, allowed_remote_exmods=ALLOWED_EXMODS)
    return TRANSPORT


def cleanup():
    global TRANSPORT, NOTIFICATION_TRANSPORT, STREAM_TRANSPORT
    for transport in (TRANSPORT, NOTIFICATION_TRANSPORT, STREAM_TRANSPORT):
        if transport is not None:
            transport.cleanup()
    TRANSPORT = NOTIFICATION_TRANSPORT = STREAM_TRANSPORT = None


def get_notifier(conf, publisher_id, topics=None):
    """Notifications go where [oslo_messaging_notifications] says (nowhere
    unless a driver is set there); on ``topics`` instead of its topics
    when given."""
    global NOTIFICATION_TRANSPORT
    if NOTIFICATION_TRANSPORT is None:
        NOTIFICATION_TRANSPORT = messaging.get_notification_transport(conf)
    return messaging.Notifier(NOTIFICATION_TRANSPORT,
                              publisher_id=publisher_id,
                              serializer=RequestContextSerializer(),
                              topics=topics)


def _stream_transport():
    """The transport of streams: the RPC broker (transport_url), whatever
    [oslo_messaging_notifications] says; one per process, so a sender and
    a listener in one process (the all-in-one's inproc://) meet."""
    global STREAM_TRANSPORT
    if STREAM_TRANSPORT is None:
        assert TRANSPORT is not None, 'rpc.init() was not called'
        STREAM_TRANSPORT = messaging.get_notification_transport(
            TRANSPORT.conf, url=TRANSPORT.conf.transport_url)
    return STREAM_TRANSPORT


def publish(topic, priority, event_type, publisher_id, payload, retry):
    """Publish one notification-format message on ``topic`` (a stream:
    common/heartbeat_stream.py), with no context. A broker that cannot be
    reached within ``retry`` reconnections is a MessageDeliveryFailure.

    Not through messaging.Notifier: it hides a failed send from its caller
    and logs it with a traceback and the whole payload, where a sender of a
    stream wants to count it and go on (the next beat is due anyway).
    """
    message = {'message_id': str(uuid.uuid4()), 'publisher_id': publisher_id,
               'event_type': event_type, 'priority': priority.upper(),
               'payload': payload,
               'timestamp': time.strftime('%Y-%m-%d %H:%M:%S',
                                          time.gmtime())}
    target = messaging.Target(topic='%s.%s' % (topic, priority))
    try:
        _stream_transport()._send_notification(target, {}, message,
                                               version=2.0, retry=retry)
    except (kombu_exceptions.KombuError, OSError) as error:
        raise messaging.MessageDeliveryFailure(
            'Could not reach the message broker: %s' % error) from error


def get_stream_listener(topic, endpoint, batch_size, batch_timeout):
    """A batch listener of stream ``topic``: ``endpoint``'s method named
    after the priority gets lists of up to ``batch_size`` messages, at
    least every ``batch_timeout`` seconds while any wait. Listeners of one
    topic share its queue: each message goes to one of them."""
    return _stops_promptly(messaging.get_batch_notification_listener(
        _stream_transport(), [messaging.Target(topic=topic)], [endpoint],
        executor='threading', batch_size=batch_size,
        batch_timeout=batch_timeout))


def get_client(target, version_cap=None):
    assert TRANSPORT is not None, 'rpc.init() was not called'
    return messaging.get_rpc_client(
        TRANSPORT, target, version_cap=version_cap,
        serializer=RequestContextSerializer())


def get_server(target, endpoints, drop_late=False, keep_reply=None,
               answer_again=None, watch=None):
    """An RPC server; with ``drop_late``, calls whose caller's deadline has
    passed before they start are dropped (see DropsLateCalls), and
    ``keep_reply(change_id, answer)`` keeps the answer of each call the
    change log holds, ``answer_again`` answers a call delivered twice,
    ``watch`` counts the calls served and dropped."""
    assert TRANSPORT is not None, 'rpc.init() was not called'
    if drop_late:
        endpoints = [DropsLateCalls(endpoint, keep_reply, answer_again,
                                    watch)
                     for endpoint in endpoints]
    # The threading executor is oslo.messaging's default (and its future).
    return _stops_promptly(messaging.get_rpc_server(
        TRANSPORT, target, endpoints, serializer=RequestContextSerializer()))


class _ServerExecutor(concurrent.futures.ThreadPoolExecutor):
    """The thread pool of our servers and listeners: the standard
    library's, which oslo.messaging's server uses as it does futurist's
    (the 'threading' executor): ``max_workers``, ``submit``, ``shutdown``.
    Its shutdown wakes idle workers at once; futurist's idle workers look
    for a stop once a second (futurist ThreadWorker.MAX_IDLE_FOR), so
    every server's ``wait`` took up to a second after its last message
    was handled. Shutdown still waits for the messages taken."""

    def __init__(self, max_workers=None):
        super().__init__(max_workers=max_workers,
                         thread_name_prefix='rpc-server')


def _stops_promptly(server):
    """``server`` with its pool made by _ServerExecutor. oslo.messaging
    offers no public choice of the pool's class (its own tests set this
    attribute too); if it is gone, the server keeps futurist's pool and
    only its stop is slower."""
    if hasattr(server, '_executor_cls'):
        server._executor_cls = _ServerExecutor
    return server


class CallAbandoned(messaging.MessagingTimeout):
    """The caller's service is stopping: it stopped waiting for the answer
    (``Calls.abandon``). A MessagingTimeout, which callers already take
    for "no conductor answered"."""


class Calls:
    """The bounded calls (``call_within``) of one client, which its
    service abandons when it stops: every caller still waiting for an
    answer gets CallAbandoned at once, and so does every call made after,
    instead of waiting out its timeout. An agent's RPC handler confirming
    a release to a conductor that has stopped (the all-in-one stops its
    conductor first) would otherwise hold the agent's stop for the whole
    ``[agent] report_timeout``; what such a call would have told is told
    again after a restart (docs/design.md, "Release confirmation").
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._waiting = set()       # an Event per waiting caller
        self._abandoned = False

    def abandon(self):
        with self._lock:
            self._abandoned = True
            waiting = list(self._waiting)
        for woken in waiting:
            woken.set()

    def resume(self):
        """Calls are waited for again (the service started again)."""
        with self._lock:
            self._abandoned = False

    @property
    def abandoned(self):
        return self._abandoned

    def wait(self, answer, timeout):
        """Wait up to ``timeout`` seconds for the future ``answer``; True
        when it is done, False on timeout; CallAbandoned when abandoned
        first."""
        woken = threading.Event()
        with self._lock:
            if self._abandoned:
                raise CallAbandoned('Stopping: not waiting for an answer')
            self._waiting.add(woken)
        try:
            answer.add_done_callback(lambda _answer: woken.set())
            woken.wait(timeout)
        finally:
            with self._lock:
                self._waiting.discard(woken)
        if answer.done():
            return True
        if self._abandoned:
            raise CallAbandoned('Stopping: stopped waiting for an answer')
        return False


def call_within(client, context, method, timeout, version='1.0',
                call_monitor_timeout=None, calls=None, settle=None,
                in_flight=None, **kwargs):
    """``client.call`` answered, or MessagingTimeout after ``timeout``
    seconds at the latest, publish retries included.

    The call carries a copy of ``context`` with ``deadline`` set (an
    earlier deadline already there wins), so the server can drop it if it
    arrives after its caller stopped waiting. The publish retries
    ``[DEFAULT] rpc_publish_retries`` times. ``calls``: the caller's
    ``Calls``, whose ``abandon`` ends the wait at once (CallAbandoned).

    ``settle`` (a write's call): a failure that is not the server's answer
    (a timeout, a publish that failed, a lost connection: the message may
    still reach a conductor) is raised only once the deadline and
    ``settle`` seconds more have passed. A conductor commits nothing of a
    call past its deadline (common/deadlines.py), so the failure then
    means that nothing was written, as the caller's 503 says; before the
    deadline it did not (issue 28: a publish that failed after 19 s of
    30, whose message still reached the conductor in time and was
    carried out).

    ``in_flight`` (a Gauge: ``inc``, ``dec``) counts the call until its
    sending thread ends, which may be after its caller's answer: while the
    publish retries, or the thread waits out a timeout.
    """
    if calls is not None and calls.abandoned:
        raise CallAbandoned('Stopping: %s not sent' % method)
    now = time.time()
    deadline = now + timeout
    if getattr(context, 'deadline', None) is not None:
        deadline = min(deadline, context.deadline)
    # The deadline travels as wall-clock time; this process waits on its
    # monotonic clock, which no clock adjustment moves.
    expires = time.monotonic() + (deadline - now)
    if deadline <= now or not _IN_FLIGHT.acquire(timeout=deadline - now):
        raise messaging.MessagingTimeout(
            'No time left to call %s' % method)
    if in_flight is not None:
        in_flight.inc()
    sent = copy.copy(context)
    sent.deadline = deadline
    # One id for the call, in each delivery of its message (a publish
    # retried, a broker node lost before it had the acknowledgement).
    sent.call_id = str(uuid.uuid4())
    answer = concurrent.futures.Future()

    def send():
        try:
            left = expires - time.monotonic()
            if left <= 0 or not answer.set_running_or_notify_cancel():
                return
            cctxt = client.prepare(
                version=version, timeout=left, retry=publish_retries(),
                call_monitor_timeout=call_monitor_timeout)
            answer.set_result(call_reaching_broker(cctxt, sent, method,
                                                   **kwargs))
        except BaseException as error:   # handed to the caller
            answer.set_exception(error)
        finally:
            _IN_FLIGHT.release()
            if in_flight is not None:
                in_flight.dec()

    threading.Thread(target=send, name='rpc-call-%s' % method,
                     daemon=True).start()
    try:
        if calls is not None:
            try:
                calls.wait(answer, max(0.0, expires - time.monotonic()))
            except CallAbandoned:
                answer.cancel()
                raise CallAbandoned('Stopping: stopped waiting for the '
                                    'answer to %s' % method) from None
        return answer.result(timeout=max(0.0, expires - time.monotonic()))
    except concurrent.futures.TimeoutError:
        answer.cancel()
        failure = messaging.MessagingTimeout(
            'No answer to %s within %.1fs' % (method, timeout))
    except messaging.MessagingException as error:
        if not _unanswered(error):
            raise
        failure = error
    if settle is None:
        raise failure
    _settle(expires + settle, method, sent)
    raise WriteNotDone(method, failure) from failure


class WriteNotDone(messaging.MessagingTimeout):
    """A write's call that got no answer, raised once its deadline and the
    margin after it have passed (``call_within``'s settle): no conductor
    wrote it, nor will. ``unreachable``: the broker could not be reached
    (the publish failed), rather than no answer came."""

    def __init__(self, method, failure):
        super().__init__('No conductor answered %s before its deadline: '
                         'not carried out (%s)' % (method, failure))
        self.unreachable = isinstance(failure,
                                      messaging.MessageDeliveryFailure)


def _unanswered(error):
    """True for a failure of a call that is not its server's answer: the
    message may have reached a server, or may still. A stopping caller's
    abandonment (CallAbandoned) is raised at once: its service stops."""
    return not isinstance(error, (messaging.RemoteError, CallAbandoned))


# The clock of _settle (tests replace it).
_settle_clock = time


def _settle(until, method, context):
    """Wait until ``until`` (time.monotonic()): a write's call that got no
    answer is past its deadline, and so past any commit of its server,
    before its caller is told that it failed."""
    left = until - _settle_clock.monotonic()
    if left > 0:
        LOG.info('No answer to %s of request %s: waiting %.1fs for its '
                 'deadline to pass, after which no conductor writes it',
                 method, context.request_id, left)
        _settle_clock.sleep(left)


def keep_asking(ask, seconds, enough):
    """``ask()`` again, half a second apart (on _settle's clock), while
    it fails with a MessagingException or ``enough(answer)`` is false, for
    ``seconds`` at most; the last answer, or the last failure raised."""
    until = _settle_clock.monotonic() + seconds
    while True:
        try:
            answer = ask()
        except messaging.MessagingException:
            if _settle_clock.monotonic() >= until:
                raise
        else:
            if enough(answer) or _settle_clock.monotonic() >= until:
                return answer
        _settle_clock.sleep(0.5)


def publish_retries():
    """``retry`` for prepare(): None (for ever) for a negative option,
    which oslo.messaging would take as no retry at all when it has to
    open a new connection."""
    retries = CONF.rpc_publish_retries
    return None if retries < 0 else retries


def cast_within(client, context, method, ttl, version='1.0', **kwargs):
    """``client.cast`` of a message that is worth nothing after ``ttl``
    seconds: it carries a deadline ``ttl`` from now, and a server that
    drops late calls (get_server ``drop_late``) drops it unserved if it
    waited longer in the queue (a heartbeat behind a backlog, say). The
    publish retries ``[DEFAULT] rpc_publish_retries`` times; a broker
    that cannot be reached is a MessageDeliveryFailure."""
    sent = copy.copy(context)
    sent.deadline = time.time() + ttl
    cctxt = client.prepare(version=version, retry=publish_retries())
    try:
        cctxt.cast(sent, method, **kwargs)
    except kombu_exceptions.KombuError as error:
        raise messaging.MessageDeliveryFailure(
            'Could not reach the message broker: %s' % error) from error


def call_reaching_broker(cctxt, context, method, **kwargs):
    """``cctxt.call``; a broker that cannot be reached is a
    MessageDeliveryFailure (oslo.messaging lets kombu's own error through
    when a new connection fails after its retries)."""
    try:
        return cctxt.call(context, method, **kwargs)
    except kombu_exceptions.KombuError as error:
        raise messaging.MessageDeliveryFailure(
            'Could not reach the message broker: %s' % error) from error


class DropsLateCalls:
    """An RPC endpoint that refuses calls whose caller's deadline has
    passed before they start: the caller has already answered its own
    client (a 503), so doing the work now would be a write nobody asked
    for any more (an ARQ created after its POST got a 503). One log line,
    no traceback, nothing done. Calls without a deadline run as before.

    ``keep_reply(change_id, answer)``: called once a call that the change
    log holds (it wrote) returned, so that a caller whose answer the broker
    lost can read it (conductor/rpcapi.py ``_answer_kept``).
    ``answer_again(call_id, method)``: whether a call with a ``call_id``
    (a call of the API) was carried out before (the broker delivered it
    twice): None, not (or a read); else what to answer ({'reply':
    answer}), or {} to raise CallDoneBefore. Asked before the call runs
    where answers are kept, else once its write was refused.
    ``watch``: ``serving(method)``, a context manager around each call
    carried out, and ``dropped(method)``, told of each call dropped late
    (conductor/metrics.py RpcCalls).
    """

    def __init__(self, endpoint, keep_reply=None, answer_again=None,
                 watch=None):
        self._endpoint = endpoint
        self._keep_reply = keep_reply
        self._answer_again = answer_again
        self._watch = watch or _Unwatched()

    def __getattr__(self, name):
        attr = getattr(self._endpoint, name)
        if name.startswith('_') or not inspect.isroutine(attr):
            return attr
        return _checking_deadline(name, attr, self._keep_reply,
                                  self._answer_again, self._watch)


class _Unwatched:
    serving = staticmethod(lambda method: contextlib.nullcontext())
    dropped = staticmethod(lambda method: None)


def _checking_deadline(name, method, keep_reply=None, answer_again=None,
                       watch=_Unwatched()):
    @messaging.expected_exceptions(exception.RequestDeadlinePassed,
                                   exception.CallDoneBefore)
    def checked(ctxt, **kwargs):
        with watch.serving(name):
            return _checked(ctxt, **kwargs)

    def _checked(ctxt, **kwargs):
        try:
            _drop_if_late(name, ctxt)
        except exception.RequestDeadlinePassed:
            watch.dropped(name)
            raise
        call_id = getattr(ctxt, 'call_id', None)
        # Where answers are kept (a RabbitMQ cluster, where a node lost
        # delivers a call again), a call is looked up before it runs: one
        # delivered again after it was carried out is answered, not
        # redone. Elsewhere (and for two deliveries at once) the change
        # log's unique call id alone refuses the second one's write.
        if None not in (keep_reply, answer_again, call_id):
            found = answer_again(call_id, name)
            if found is not None:
                return _done_before(ctxt, name, found)
        try:
            return _served(ctxt, **kwargs)
        except (exception.CallDoneBefore, messaging.ExpectedException) \
                as error:
            # The other delivery committed first (the change log's unique
            # call id refused this one's write). The endpoint's methods
            # wrap our exceptions: callers_errors_expected.
            wrapped = error.exc_info[1] \
                if isinstance(error, messaging.ExpectedException) else error
            if not isinstance(wrapped, exception.CallDoneBefore):
                raise
            return _done_before(ctxt, name, answer_again(call_id, name)
                                if answer_again else None)

    def _served(ctxt, **kwargs):
        # Writes of the call are refused at commit once it is late.
        with deadlines.serving(ctxt, name, kwargs):
            answer = method(ctxt, **kwargs)
            change_id = deadlines.served().change_id
        # Kept even past the deadline (outside the call): the write is
        # done, and its caller may be about to ask for the answer.
        if keep_reply is not None and change_id is not None:
            _keep(keep_reply, change_id, name, ctxt, answer)
        return answer
    return checked


def _drop_if_late(name, ctxt):
    deadline = getattr(ctxt, 'deadline', None)
    late = time.time() - deadline if deadline is not None else 0
    if late > 0:
        LOG.warning('Dropped %s of request %s: its caller stopped waiting '
                    '%.1fs ago (or this host\'s clock is that far ahead of '
                    'the caller\'s)', name, ctxt.request_id, late)
        raise exception.RequestDeadlinePassed(request_id=ctxt.request_id,
                                              late=late)


def _done_before(ctxt, name, found):
    """The answer of a call carried out before: ``found['reply']``, else
    CallDoneBefore (a 503 naming the change log)."""
    if 'reply' not in (found or {}):
        raise exception.CallDoneBefore(request_id=ctxt.request_id,
                                       method=name)
    LOG.warning('Request %s: %s was delivered again after it was carried '
                'out; answered from the change log', ctxt.request_id, name)
    return found['reply']


def _keep(keep_reply, change_id, name, ctxt, answer):
    """The answer kept, or a warning: the call itself is done either
    way, and its caller most likely gets the answer by the broker."""
    try:
        keep_reply(change_id, answer)
    except Exception as error:      # noqa: BLE001 - logged, not raised
        LOG.warning('Did not keep the answer to %s of request %s: %s',
                    name, ctxt.request_id, error)


def callers_errors_expected(endpoint_class):
    """Class decorator for RPC endpoints: our exceptions answer the caller
    (a 404, a 409, a driver's refusal); oslo.messaging should not log them
    as server errors with a traceback."""
    expected = messaging.expected_exceptions(exception.CyborgLikeException)
    for name, method in list(vars(endpoint_class).items()):
        if inspect.isfunction(method) and not name.startswith('_'):
            setattr(endpoint_class, name, expected(method))
    return endpoint_class
