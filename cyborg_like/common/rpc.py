"""RPC plumbing: one transport per process, context-carrying serializer.

``init`` is called once by each console script. With ``transport_url =
fake://`` every RPC server and client of the process share one in-memory
transport, which is how the all-in-one runs without a broker.
"""

import inspect

import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

from cyborg_like.common import context as ctx
from cyborg_like.common import exception

TRANSPORT = None
NOTIFICATION_TRANSPORT = None

ALLOWED_EXMODS = [exception.__name__]


class RequestContextSerializer(messaging.NoOpSerializer):
    """Sends the request context with every message; payloads are JSON."""

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return ctx.RequestContext.from_dict(context)


def register_opts(conf):
    """Register oslo.messaging's options now rather than when the transport
    is made, so defaults (the all-in-one's transport_url) can be set first.
    """
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=group)


def init(conf):
    global TRANSPORT
    if TRANSPORT is None:
        TRANSPORT = messaging.get_rpc_transport(
            conf, allowed_remote_exmods=ALLOWED_EXMODS)
    return TRANSPORT


def cleanup():
    global TRANSPORT, NOTIFICATION_TRANSPORT
    for transport in (TRANSPORT, NOTIFICATION_TRANSPORT):
        if transport is not None:
            transport.cleanup()
    TRANSPORT = NOTIFICATION_TRANSPORT = None


def get_notifier(conf, publisher_id):
    """Notifications go where [oslo_messaging_notifications] says (nowhere
    unless a driver is set there)."""
    global NOTIFICATION_TRANSPORT
    if NOTIFICATION_TRANSPORT is None:
        NOTIFICATION_TRANSPORT = messaging.get_notification_transport(conf)
    return messaging.Notifier(NOTIFICATION_TRANSPORT,
                              publisher_id=publisher_id,
                              serializer=RequestContextSerializer())
NOTIFICATION_TRANSPORT = None


def get_client(target, version_cap=None):
    assert TRANSPORT is not None, 'rpc.init() was not called'
    return messaging.get_rpc_client(
        TRANSPORT, target, version_cap=version_cap,
        serializer=RequestContextSerializer())


def get_server(target, endpoints):
    assert TRANSPORT is not None, 'rpc.init() was not called'
    # The threading executor is oslo.messaging's default (and its future).
    return messaging.get_rpc_server(
        TRANSPORT, target, endpoints, serializer=RequestContextSerializer())


def callers_errors_expected(endpoint_class):
    """Class decorator for RPC endpoints: our exceptions answer the caller
    (a 404, a 409, a driver's refusal); oslo.messaging should not log them
    as server errors with a traceback."""
    expected = messaging.expected_exceptions(exception.CyborgLikeException)
    for name, method in list(vars(endpoint_class).items()):
        if inspect.isfunction(method) and not name.startswith('_'):
            setattr(endpoint_class, name, expected(method))
    return endpoint_class
