"""The conductor process: an RPC server on the conductor topic."""

import futurist
import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import rpcapi as agent_rpcapi
from cyborg_like.common import periodic
from cyborg_like.common import rpc
from cyborg_like.conductor import heartbeats
from cyborg_like.conductor import manager
from cyborg_like.conductor import placement
from cyborg_like.conductor import rpcapi
from cyborg_like.conf import CONF

LOG = logging.getLogger(__name__)


class ConductorService:
    def __init__(self, host=None):
        self.host = host or CONF.host
        agent_api = agent_rpcapi.AgentAPI()
        self.workers = futurist.ThreadPoolExecutor(
            max_workers=CONF.conductor.workers)
        self.heartbeats = heartbeats.HeartbeatCollector(
            CONF, agent_api,
            rpc.get_notifier(CONF, 'accelerator.conductor.%s' % self.host))
        self.manager = manager.ConductorManager(agent_api, self.workers,
                                                self.heartbeats)
        target = messaging.Target(topic=rpcapi.TOPIC, server=self.host)
        self._server = rpc.get_server(target, [self.manager])
        self.placement = placement.PlacementSync(CONF)
        self._periodic = periodic.Periodic('conductor-periodics', [
            (CONF.conductor.agent_timeout,
             self.manager._fail_interrupted_binds),
        ])

    def start(self):
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
        LOG.info('Conductor on %s stopped', self.host)
