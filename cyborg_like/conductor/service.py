"""The conductor process: an RPC server on the conductor topic."""

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg_like.agent import rpcapi as agent_rpcapi
from cyborg_like.common import periodic
from cyborg_like.common import rpc
from cyborg_like.conductor import heartbeats
from cyborg_like.conductor import host_liveness
from cyborg_like.conductor import manager
from cyborg_like.conductor.placement import runner as placement
from cyborg_like.conductor import rpcapi
from cyborg_like.conductor import workqueue
from cyborg_like.conf import CONF
from cyborg_like.db import conductors

LOG = logging.getLogger(__name__)


class ConductorService:
    def __init__(self, host=None):
        self.host = host or CONF.host
        # This process's identity in the conductors table (liveness).
        self.uuid = uuidutils.generate_uuid()
        agent_api = agent_rpcapi.AgentAPI()
        self.workers = workqueue.WorkQueue(CONF.conductor.workers,
                                           CONF.conductor.max_queued_work)
        self.heartbeats = heartbeats.HeartbeatCollector(
            CONF, agent_api,
            rpc.get_notifier(CONF, 'accelerator.conductor.%s' % self.host))
        self.manager = manager.ConductorManager(agent_api, self.workers,
                                                self.heartbeats, self.uuid)
        target = messaging.Target(topic=rpcapi.TOPIC, server=self.host)
        # Calls whose caller has given up (an API request answered 503 while
        # the broker was away) are dropped rather than carried out late.
        self._server = rpc.get_server(target, [self.manager],
                                      drop_late=True)
        self.placement = placement.PlacementSync(CONF)
        self.liveness = host_liveness.HostLiveness(
            CONF.conductor.host_down_after)
        self._periodic = periodic.Periodic('conductor-periodics', [
            (CONF.conductor.service_heartbeat_interval, self._beat),
            (CONF.conductor.service_heartbeat_interval,
             self.manager._fail_interrupted_work),
            (CONF.conductor.service_heartbeat_interval, self.liveness.sweep),
        ])

    def _beat(self):
        conductors.beat(self.uuid, self.host)

    def start(self):
        # Alive before accepting work, so no sweep takes ours for orphaned.
        self._beat()
        self.heartbeats.start()
        self._server.start()
        self.placement.start()
        self._periodic.start()
        LOG.info('Conductor on %s listening on topic %s', self.host,
                 rpcapi.TOPIC)

    def stop(self):
        self._periodic.stop()
        self.placement.stop()
        self._server.stop()
        self._server.wait()
        self.heartbeats.stop()
        self.workers.shutdown(wait=True)
        # Whatever is left unfinished is now anyone's to fail at once; if
        # the database is gone too, the others see this conductor's
        # heartbeat stop instead.
        try:
            conductors.remove(self.uuid)
        except Exception as error:
            LOG.warning('Could not remove this conductor from the '
                        'conductors table: %s', error)
        LOG.info('Conductor on %s stopped', self.host)
