"""Telling Nova that an accelerator request's binding ended.

Nova waits for the ``accelerator-request-bound`` external event (tag = the
ARQ uuid, status completed or failed) before it spawns the instance. The
conductor sends it with its service credentials from [nova] whenever
that group names an auth_type; keystoneauth retries transient failures as
[nova] connect_retries / status_code_retries say.
"""

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
        try:
            self._send(event)
            return True
        except ks_exc.ClientException as e:
            # Retries are spent, or Nova will not take it (4xx: the
            # instance is gone): the binding's outcome stands either way.
            LOG.error('Could not tell Nova that ARQ %s of instance %s %s: '
                      '%s', arq_uuid, instance_uuid, event['status'], e)
            return False

    def _send(self, event):
        response = self._adapter.post(
            '/os-server-external-events', json={'events': [event]},
            microversion=MICROVERSION, raise_exc=True)
        codes = [str(answer.get('code')) for answer
                 in response.json().get('events', [])]
        LOG.info('Told Nova that ARQ %s of instance %s %s (event %s, '
                 'answered %s)', event['tag'], event['server_uuid'],
                 event['status'], EVENT, ', '.join(codes) or '-')
