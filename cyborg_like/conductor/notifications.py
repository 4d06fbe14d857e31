"""Versioned notifications: one event type per lifecycle change, each
payload with a schema version (docs/notifications.md), as Nova's
``versioned_notifications``.

Every event type and its payload are declared here, once. A payload is
sent as ``{"cyborg_like_object.name": ..., ".namespace": "cyborg_like",
".version": "1.0", ".data": {field: value}}``; its fields are exactly
those declared (a field added to a payload bumps its minor version, a
field removed or changed in meaning its major version).

``Notifier`` is what the conductor's workflows are given: its ``info``,
``warn`` and ``error`` send the unversioned notifications of earlier
releases (``accelerator.*``), and ``emit`` the versioned ones, each as
``[notifications] notification_format`` says. All are sent after the
change they tell of has committed.
"""

import collections

from oslo_log import log as logging

from cyborg_like.common import rpc
from cyborg_like.conf import notifications as opts
from cyborg_like.db import operations

LOG = logging.getLogger(__name__)

NAMESPACE = 'cyborg_like'

Payload = collections.namedtuple('Payload', 'name version fields')

ARQ = Payload('AcceleratorRequestPayload', '1.0', (
    'uuid', 'state', 'state_reason', 'device_profile_name',
    'device_profile_group_id', 'hostname', 'device_rp_uuid',
    'instance_uuid', 'project_id', 'resource_class', 'attach_handle_type',
    'attach_handle_uuid'))
DEVICE = Payload('DeviceServicePayload', '1.0', (
    'device_uuid', 'hostname', 'health', 'service_state', 'status',
    'reasons'))
OPERATION = Payload('OperationPayload', '1.0', (
    'uuid', 'type', 'target_uuid', 'state', 'detail', 'project_id',
    'hostname'))
ROLLOUT = Payload('RolloutPayload', '1.0', (
    'rollout_uuid', 'kind', 'image', 'state', 'wave', 'waves', 'reason'))
LEASE_WINDOW = Payload('LeaseWindowPayload', '1.0', (
    'lease_uuid', 'project_id', 'starts_at', 'ends_at'))

ARQ_BOUND = 'accelerator_request.bound'
ARQ_UNBOUND = 'accelerator_request.unbound'
ARQ_BIND_FAILED = 'accelerator_request.bind_failed'
ARQ_DELETED = 'accelerator_request.deleted'
DEVICE_DRAINED = 'device.drained'
DEVICE_BACK = 'device.back_in_service'
DEVICE_UNHEALTHY = 'device.unhealthy'
OPERATION_START = 'operation.start'
OPERATION_END = 'operation.end'
WAVE_START = 'rollout.wave.start'
WAVE_END = 'rollout.wave.end'
ROLLED_BACK = 'rollout.rolled_back'
WINDOW_OPEN = 'lease.window.open'
WINDOW_CLOSE = 'lease.window.close'

# Every event type: (payload, priority).
EVENTS = {
    ARQ_BOUND: (ARQ, 'info'),
    ARQ_UNBOUND: (ARQ, 'info'),
    ARQ_BIND_FAILED: (ARQ, 'error'),
    ARQ_DELETED: (ARQ, 'info'),
    DEVICE_DRAINED: (DEVICE, 'warn'),
    DEVICE_BACK: (DEVICE, 'info'),
    DEVICE_UNHEALTHY: (DEVICE, 'error'),
    OPERATION_START: (OPERATION, 'info'),
    OPERATION_END: (OPERATION, 'info'),
    WAVE_START: (ROLLOUT, 'info'),
    WAVE_END: (ROLLOUT, 'info'),
    ROLLED_BACK: (ROLLOUT, 'warn'),
    WINDOW_OPEN: (LEASE_WINDOW, 'info'),
    WINDOW_CLOSE: (LEASE_WINDOW, 'info'),
}


def message(event_type, fields):
    """The versioned payload of ``event_type``; ``fields`` must be
    exactly the payload's (a missing or an extra one is a bug here)."""
    payload, _priority = EVENTS[event_type]
    if set(fields) != set(payload.fields):
        raise ValueError('%s: fields %s, declared %s' % (
            event_type, sorted(fields), sorted(payload.fields)))
    return {'cyborg_like_object.name': payload.name,
            'cyborg_like_object.namespace': NAMESPACE,
            'cyborg_like_object.version': payload.version,
            'cyborg_like_object.data': {name: fields[name]
                                        for name in payload.fields}}


class Notifier:
    def __init__(self, conf, publisher_id, make=rpc.get_notifier):
        """``make(conf, publisher_id, topics)``: an oslo.messaging
        Notifier (on its default topics when ``topics`` is None)."""
        form = conf.notifications.notification_format
        self._legacy = make(conf, publisher_id) \
            if form in (opts.UNVERSIONED, opts.BOTH) else None
        self._versioned = make(
            conf, publisher_id,
            conf.notifications.versioned_notifications_topics) \
            if form in (opts.VERSIONED, opts.BOTH) else None

    @property
    def versioned(self):
        return self._versioned is not None

    # The unversioned notifications of earlier releases.
    def info(self, context, event_type, payload):
        if self._legacy is not None:
            self._legacy.info(context, event_type, payload)

    def warn(self, context, event_type, payload):
        if self._legacy is not None:
            self._legacy.warn(context, event_type, payload)

    def error(self, context, event_type, payload):
        if self._legacy is not None:
            self._legacy.error(context, event_type, payload)

    def emit(self, context, event_type, fields):
        """Send versioned ``event_type`` with ``fields`` (a dict, or a
        callable making it: read only when versioned ones are sent)."""
        if self._versioned is None:
            return
        if callable(fields):
            fields = fields()
        _payload, priority = EVENTS[event_type]
        try:
            getattr(self._versioned, priority)(
                context, event_type, message(event_type, fields))
        except Exception:
            # The change committed; a lost notification is logged, never
            # turned into a failed request.
            LOG.exception('Could not send notification %s', event_type)


def emit(notifier, context, event_type, fields):
    """``notifier.emit`` where the notifier may be None or a plain
    oslo.messaging Notifier (a test's): those send no versioned ones."""
    if isinstance(notifier, Notifier):
        notifier.emit(context, event_type, fields)


def arq_fields(arq):
    """An ARQ's payload from its API view (db/arqs.py)."""
    return {name: arq.get(name) for name in ARQ.fields}


def operation_fields(operation):
    return {name: operation.get(name) for name in OPERATION.fields}


def operation_told(notifier, context, uuid, event_type):
    """Operation ``uuid`` started or ended: its payload as it is now."""
    emit(notifier, context, event_type,
         lambda: operation_fields(operations.get(uuid)))
