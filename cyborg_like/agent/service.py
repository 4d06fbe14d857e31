"""The agent process: discovery and heartbeat loops plus an RPC server."""

import threading

from futurist import periodics
import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import manager
from cyborg_like.agent import resource_tracker
from cyborg_like.agent import rpcapi
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF

LOG = logging.getLogger(__name__)


def _every(spacing, func):
    """A futurist periodic task calling ``func``; errors are logged only."""

    @periodics.periodic(spacing, run_immediately=True)
    def task():
        try:
            func()
        except Exception:
            LOG.exception('Periodic task %s failed; retrying in %ss',
                          func.__name__, spacing)

    return task, (), {}


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
        self._worker = periodics.PeriodicWorker([
            _every(CONF.agent.discovery_interval,
                   self.tracker.update_inventory),
            _every(CONF.agent.heartbeat_interval, self.tracker.heartbeat),
        ])
        self._thread = None

    def start(self):
        self._server.start()
        self._thread = threading.Thread(target=self._worker.start,
                                        name='agent-periodics', daemon=True)
        self._thread.start()
        LOG.info('Agent on %s started with drivers %s', self.host,
                 ', '.join(self.tracker.drivers) or '(none)')

    def stop(self):
        self._worker.stop()
        self._worker.wait()
        if self._thread is not None:
            self._thread.join()
        self._server.stop()
        self._server.wait()
        LOG.info('Agent on %s stopped', self.host)
