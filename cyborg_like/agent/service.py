"""The agent process: discovery and heartbeat loops plus an RPC server."""

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import manager
from cyborg_like.agent import resource_tracker
from cyborg_like.agent import rpcapi
from cyborg_like.common import periodic
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF

LOG = logging.getLogger(__name__)


class AgentService:
    def __init__(self, host=None, drivers=None):
        self.host = host or CONF.host
        conductor_api = conductor_rpcapi.ConductorAPI(
            timeout=CONF.agent.report_timeout)
        self.tracker = resource_tracker.ResourceTracker(
            self.host, CONF, conductor_api, drivers=drivers)
        target = messaging.Target(topic=rpcapi.TOPIC, server=self.host)
        self._server = rpc.get_server(
            target, [manager.AgentManager(self.tracker)])
        self._periodic = periodic.Periodic('agent-periodics', [
            (CONF.agent.discovery_interval, self.tracker.update_inventory),
            (CONF.agent.heartbeat_interval, self.tracker.heartbeat),
        ])

    def start(self):
        self._server.start()
        self._periodic.start()
        LOG.info('Agent on %s started with drivers %s', self.host,
                 ', '.join(self.tracker.drivers) or '(none)')

    def quiesce(self):
        """Stop discovery and heartbeats (which call the conductor); keep
        answering the conductor until ``stop``."""
        self._periodic.stop()

    def stop(self):
        self._periodic.stop()
        self._server.stop()
        self._server.wait()
        LOG.info('Agent on %s stopped', self.host)
