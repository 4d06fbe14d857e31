"""Telling Nova that an accelerator request's binding ended.

Nova waits for the ``accelerator-request-bound`` external event (tag = the
ARQ uuid, status completed or failed) before it spawns the instance. The
conductor sends it with its service credentials from [nova] whenever
that group names an auth_type; transient failures are retried.
"""

import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# The first compute API microversion that knows accelerator-request-bound.
MICROVERSION = '2.82'
EVENT = 'accelerator-request-bound'


class NovaNotifier:
    def __init__(self, conf):
        self.conf = conf
        self._adapter = None
        if conf.nova.auth_type:
            auth = ks_loading.load_auth_from_conf_options(conf, 'nova')
            session = ks_loading.load_session_from_conf_options(
                conf, 'nova', auth=auth)
            self._adapter = ks_loading.load_adapter_from_conf_options(
                conf, 'nova', session=session, auth=auth,
                service_type='compute', min_version=MICROVERSION,
                max_version=MICROVERSION)
        else:
            LOG.info('[nova] has no auth_type: Nova is not told when '
                     'bindings end')

    def binding_ended(self, arq_uuid, instance_uuid, succeeded):
        if self._adapter is None or not instance_uuid:
            return False
        event = {'name': EVENT, 'server_uuid': instance_uuid,
                 'tag': arq_uuid,
                 'status': 'completed' if succeeded else 'failed'}
        delay = self.conf.nova.event_retry_delay
        for attempt in range(self.conf.nova.event_retries + 1):
            try:
                self._send(event)
                return True
            except (ks_exc.ConnectFailure, ks_exc.ConnectTimeout,
                    ks_exc.ServiceUnavailable, ks_exc.BadGateway,
                    ks_exc.GatewayTimeout, ks_exc.InternalServerError) as e:
                LOG.warning('Telling Nova about ARQ %s failed (%s); attempt '
                            '%d', arq_uuid, e, attempt + 1)
                time.sleep(delay)
                delay *= 2
            except ks_exc.ClientException as e:
                # 4xx: Nova will not take it (instance gone); do not insist.
                LOG.error('Nova refused the event for ARQ %s: %s', arq_uuid,
                          e)
                return False
        LOG.error('Gave up telling Nova that ARQ %s of instance %s %s',
                  arq_uuid, instance_uuid, event['status'])
        return False

    def _send(self, event):
        response = self._adapter.post(
            '/os-server-external-events', json={'events': [event]},
            microversion=MICROVERSION, raise_exc=True)
        LOG.info('Told Nova: %s', response.json())
