"""The agent process: discovery and heartbeat loops plus an RPC server."""

import threading

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import manager
from cyborg_like.agent import playbook_runner
from cyborg_like.agent import resource_tracker
from cyborg_like.agent import rpcapi
from cyborg_like.common import periodic
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi as conductor_rpcapi

LOG = logging.getLogger(__name__)


class AgentService:
    def __init__(self, conf, host=None, drivers=None):
        self.conf = conf
        self.host = host or conf.host
        conductor_api = conductor_rpcapi.ConductorAPI(
            timeout=conf.agent.report_timeout,
            call_monitor_timeout=conf.agent.report_pickup_timeout)
        self.tracker = resource_tracker.ResourceTracker(
            self.host, conf, conductor_api, drivers=drivers)
        playbooks_conductor_api = conductor_rpcapi.ConductorAPI(
            timeout=conf.agent.report_timeout)
        self.playbooks = playbook_runner.PlaybookRunner(
            self.host, conf, playbooks_conductor_api, self.tracker)
        # Their calls still waiting for a conductor are abandoned by stop.
        self._conductor_apis = (conductor_api, playbooks_conductor_api)
        target = messaging.Target(topic=rpcapi.TOPIC, server=self.host)
        self.manager = manager.AgentManager(conf, self.tracker,
                                            playbooks=self.playbooks)
        self._server = rpc.get_server(target, [self.manager])
        self._periodic = periodic.Periodic('agent-periodics', [
            (conf.agent.discovery_interval,
             _quiet_while_conductor_away(self.tracker.update_inventory)),
            (conf.agent.heartbeat_interval,
             _quiet_while_conductor_away(self.tracker.regular_heartbeat)),
        ])
        self._stopping = threading.Event()
        self._starter = None

    def start(self):
        for conductor_api in self._conductor_apis:
            conductor_api.resume_calls()
        self._server.start()
        # The first report is retried quickly until a conductor takes it
        # (services start in any order); the loops start after it.
        self._stopping.clear()
        self._starter = threading.Thread(target=self._report_then_loop,
                                         name='agent-first-report',
                                         daemon=True)
        self._starter.start()
        LOG.info('Agent on %s started with drivers %s', self.host,
                 ', '.join(self.tracker.drivers) or '(none)')

    def _report_then_loop(self):
        if self.tracker.report_first(
                self._stopping, self.conf.agent.first_report_max_interval):
            self._periodic.start()
            # Faults drivers hear of as they happen: heartbeats at once.
            self.tracker.start_watching()

    def quiesce(self):
        """Stop discovery, heartbeats and health watchers (which call the
        conductor); keep answering the conductor until ``stop``."""
        self._stopping.set()
        if self._starter is not None:
            self._starter.join()
            self._starter = None
        self.tracker.stop_watching()
        self._periodic.stop()

    def stop(self):
        self.quiesce()
        self.playbooks.stop()
        self._server.stop()
        # Handlers still running may be waiting for a conductor's answer
        # (confirming a release, reporting the inventory it asked for): a
        # conductor that has stopped -- the all-in-one stops its conductor
        # first -- never gives one, and the wait would last the whole
        # [agent] report_timeout. What they would have told is told again
        # after a restart (a pending release comes back with the first
        # inventory report).
        for conductor_api in self._conductor_apis:
            conductor_api.abandon_calls()
        self._server.wait()
        LOG.info('Agent on %s stopped', self.host)


def _quiet_while_conductor_away(func):
    """``func`` for the periodic loop: a conductor or broker that is away
    is one warning line per try, not a traceback."""
    def task():
        try:
            func()
        except resource_tracker.CONDUCTOR_AWAY as error:
            LOG.warning('%s: no conductor answered (%s); trying again at '
                        'the next interval', func.__name__,
                        type(error).__name__)
    task.__name__ = func.__name__
    return task
