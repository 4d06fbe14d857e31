"""Telling Nova that an accelerator request's binding ended, and asking
it to release the accelerators of an instance a lease needs back.

Nova waits for the ``accelerator-request-bound`` external event (tag = the
ARQ uuid, status completed or failed) before it spawns the instance. The
conductor sends it with its service credentials from [nova] whenever
that group names an auth_type; keystoneauth retries transient failures as
[nova] connect_retries / status_code_retries say.

A running instance ignores that event, so a device a lease needs back
from one is asked of Nova as a server action ([leases]
preemption_action, conductor/leases.py): ``shelve``, then
``shelveOffload`` once the server is SHELVED; Nova deletes the
instance's accelerator requests as it offloads it.
"""

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# The first compute API microversion that knows accelerator-request-bound.
MICROVERSION = '2.82'
EVENT = 'accelerator-request-bound'
# The server action that moves an instance of each status towards
# SHELVED_OFFLOADED (Nova's preconditions: shelve from ACTIVE, SHUTOFF,
# PAUSED or SUSPENDED; shelveOffload from SHELVED).
SHELVE_STEPS = {'ACTIVE': 'shelve', 'SHUTOFF': 'shelve', 'PAUSED': 'shelve',
                'SUSPENDED': 'shelve', 'SHELVED': 'shelveOffload'}


class NovaNotifier:
    def __init__(self, conf):
        self.conf = conf
        self._adapter = None
        if conf.nova.auth_type:
            auth = ks_loading.load_auth_from_conf_options(conf, 'nova')
            session = ks_loading.load_session_from_conf_options(
                conf, 'nova', auth=auth)
            # No min/max_version here: keystoneauth reads them as the
            # API's major version (2.82 matches no endpoint of the
            # catalog); the microversion goes with each request instead.
            self._adapter = ks_loading.load_adapter_from_conf_options(
                conf, 'nova', session=session, auth=auth,
                service_type='compute')
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
            return self._send(event)
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
        codes = [answer.get('code') for answer
                 in response.json().get('events', [])]
        if codes == [422]:
            # The instance has no host yet (Nova's conductor binds before it
            # hands the instance to a compute host): nova-compute reads the
            # ARQs' state itself before it waits for events, so nothing is
            # lost.
            LOG.info('Nova took no event %s %s for ARQ %s of instance %s: '
                     'the instance has no host yet (answered 422)', EVENT,
                     event['status'], event['tag'], event['server_uuid'])
            return False
        if codes != [200]:
            # 207 with 404 inside: Nova looked for the instance in the
            # caller's project only (a [nova] user without admin), or the
            # instance is gone; either way nobody will act on it.
            LOG.error('Nova did not take the event %s %s for ARQ %s of '
                      'instance %s (answered %s): if the instance exists, '
                      "give [nova]'s user the admin role on its project "
                      '(docs/nova.md)', EVENT, event['status'], event['tag'],
                      event['server_uuid'],
                      ', '.join(map(str, codes)) or 'no event')
            return False
        LOG.info('Told Nova that ARQ %s of instance %s %s (event %s, '
                 'answered 200)', event['tag'], event['server_uuid'],
                 event['status'], EVENT)
        return True

    # A lease needs a device back (conductor/leases.py).
    def release_step(self, instance_uuid):
        """Ask Nova for the next step of shelving and offloading the
        instance, as its status says: the step sent (``shelve``,
        ``shelveOffload``), or None (nothing to ask now: offloaded or
        gone, busy, or Nova unreachable: the next run asks again)."""
        if self._adapter is None:
            return None
        try:
            status = self._adapter.get(
                '/servers/%s' % instance_uuid, microversion=MICROVERSION,
                raise_exc=True).json()['server']['status']
            action = SHELVE_STEPS.get(status)
            if action is not None:
                self._adapter.post(
                    '/servers/%s/action' % instance_uuid,
                    json={action: None}, microversion=MICROVERSION,
                    raise_exc=True)
            return action
        except ks_exc.NotFound:
            return None         # deleted: Nova deletes its requests too
        except ks_exc.ClientException as e:
            # 409: a task of the instance is under way (another
            # conductor's step included); the next run looks again.
            LOG.warning('Could not ask Nova to shelve and offload instance '
                        '%s: %s', instance_uuid, e)
            return None

    @property
    def configured(self):
        return self._adapter is not None
