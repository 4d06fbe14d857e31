"""Telling people what devices' health did: log lines and notifications.

After each heartbeat batch: a device whose health changed, a device moved
in or out of service (drained, only flagged, returned to service), and the
workloads holding a device that turned unhealthy, so Nova, a tenant's
tooling or an operator can move them. Nothing here changes any state.
"""

from oslo_log import log as logging

from cyborg_like.common import states
from cyborg_like.conductor import notifications
from cyborg_like.db import arqs
from cyborg_like.db import heartbeats

LOG = logging.getLogger(__name__)

HEALTH_CHANGED = 'accelerator.device.health.changed'
SERVICE_CHANGED = 'accelerator.device.service.changed'
WORKLOAD_DEVICE_UNHEALTHY = 'accelerator.arq.device_unhealthy'


class HealthNotices:
    def __init__(self, notifier):
        self.notifier = notifier

    def announce(self, contexts, changed, moves):
        """``contexts``: {host: request context of its heartbeat}."""
        for uuid, host, health, reasons in changed:
            self._health_changed(contexts[host], uuid, host, health, reasons)
        for move in moves:
            self._moved(contexts[move.hostname], move)
        failed = [(uuid, host) for uuid, host, health, _r in changed
                  if health == heartbeats.UNHEALTHY]
        if failed:
            self._tell_workloads(contexts, dict(failed), changed)

    def _health_changed(self, context, uuid, host, health, reasons):
        payload = {'device_uuid': uuid, 'hostname': host, 'health': health,
                   'reasons': reasons}
        if health == heartbeats.UNHEALTHY:
            LOG.warning('Device %s on %s is unhealthy: %s', uuid, host,
                        '; '.join(reasons))
            self.notifier.error(context, HEALTH_CHANGED, payload)
            notifications.emit(
                self.notifier, context, notifications.DEVICE_UNHEALTHY,
                dict(payload, service_state=None, status=None))
        else:
            LOG.info('Device %s on %s is %s', uuid, host, health)
            self.notifier.info(context, HEALTH_CHANGED, payload)

    def _moved(self, context, move):
        payload = {'device_uuid': move.uuid, 'hostname': move.hostname,
                   'event': move.event, 'service_state': move.state,
                   'reasons': move.reasons, 'status': move.status}
        if move.event == states.DRAIN:
            LOG.warning('Device %s on %s drained: not bound until healthy '
                        'again', move.uuid, move.hostname)
            self.notifier.warn(context, SERVICE_CHANGED, payload)
            self._versioned(context, notifications.DEVICE_DRAINED, move,
                            heartbeats.UNHEALTHY)
        elif move.event == states.FLAG:
            LOG.warning('Device %s on %s is unhealthy but only flagged: '
                        'automatic drain is off or its circuit breaker is '
                        'open ([health] max_drains, max_drains_per_host); '
                        'it is still bound on request', move.uuid,
                        move.hostname)
            self.notifier.error(context, SERVICE_CHANGED, payload)
        elif move.status != 'enabled':
            LOG.info('Device %s on %s is healthy again; it stays %s as an '
                     'operator set it', move.uuid, move.hostname,
                     move.status)
            self.notifier.info(context, SERVICE_CHANGED, payload)
            self._versioned(context, notifications.DEVICE_BACK, move,
                            heartbeats.HEALTHY)
        else:
            LOG.info('Device %s on %s is healthy again and back in '
                     'service', move.uuid, move.hostname)
            self.notifier.info(context, SERVICE_CHANGED, payload)
            self._versioned(context, notifications.DEVICE_BACK, move,
                            heartbeats.HEALTHY)

    def _versioned(self, context, event_type, move, health):
        notifications.emit(self.notifier, context, event_type, {
            'device_uuid': move.uuid, 'hostname': move.hostname,
            'health': health, 'service_state': move.state,
            'status': move.status, 'reasons': move.reasons})

    def _tell_workloads(self, contexts, failed, changed):
        reasons = {uuid: why for uuid, _h, _health, why in changed}
        for arq in arqs.holding(list(failed)):
            LOG.warning('Instance %s (project %s) holds unhealthy device %s '
                        'on %s through ARQ %s', arq['instance_uuid'],
                        arq['project_id'], arq['device_uuid'],
                        arq['hostname'], arq['uuid'])
            self.notifier.error(
                contexts[arq['hostname']], WORKLOAD_DEVICE_UNHEALTHY,
                {'arq_uuid': arq['uuid'], 'state': arq['state'],
                 'instance_uuid': arq['instance_uuid'],
                 'project_id': arq['project_id'],
                 'device_uuid': arq['device_uuid'],
                 'hostname': arq['hostname'],
                 'reasons': reasons[arq['device_uuid']]})
