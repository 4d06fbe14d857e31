"""The conductor process: an RPC server on the conductor topic."""

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg_like.agent import rpcapi as agent_rpcapi
from cyborg_like.common import periodic
from cyborg_like.common import rpc
from cyborg_like.conductor import heartbeat_stream
from cyborg_like.conductor import heartbeats
from cyborg_like.conductor import host_liveness
from cyborg_like.conductor import lost_answers
from cyborg_like.conductor import manager
from cyborg_like.conductor import metrics
from cyborg_like.conductor import metrics_server
from cyborg_like.conductor import notifications
from cyborg_like.conductor import own_beats
from cyborg_like.conductor.placement import runner as placement
from cyborg_like.conductor import read_model
from cyborg_like.conductor import rpcapi
from cyborg_like.conductor import workqueue
from cyborg_like.db import availability
from cyborg_like.db import changes
from cyborg_like.db import conductors
from cyborg_like.db import generations
from cyborg_like.db import usage

LOG = logging.getLogger(__name__)

# Seconds between prunings of the availability feed's change log: a
# housekeeping chore, far shorter than any sensible retention.
PRUNE_INTERVAL = 300


class ConductorService:
    def __init__(self, conf, host=None):
        self.conf = conf
        self.host = host or conf.host
        # This process's identity in the conductors table (liveness).
        self.uuid = uuidutils.generate_uuid()
        agent_api = agent_rpcapi.AgentAPI()
        self.workers = workqueue.WorkQueue(conf.conductor.workers,
                                           conf.conductor.max_queued_work)
        # Unversioned and versioned notifications, as [notifications]
        # notification_format says (conductor/notifications.py).
        notifier = notifications.Notifier(
            conf, 'accelerator.conductor.%s' % self.host)
        self.heartbeats = heartbeats.HeartbeatCollector(
            conf, agent_api, notifier)
        self.heartbeat_stream = heartbeat_stream.HeartbeatStream(
            conf, self.heartbeats)
        self.manager = manager.ConductorManager(
            conf, agent_api, self.workers, self.heartbeats, self.uuid,
            notifier=notifier)
        target = messaging.Target(topic=rpcapi.TOPIC, server=self.host)
        # Calls whose caller has given up (an API request answered 503 while
        # the broker was away) are dropped rather than carried out late.
        # Answers are kept for an API that asks for lost ones (a RabbitMQ
        # cluster: [api] lost_answer_timeout); elsewhere nobody would.
        # A call delivered twice is answered from the change log
        # (conductor/lost_answers.py), not carried out again.
        self._server = rpc.get_server(
            target, [self.manager], drop_late=True,
            keep_reply=changes.keep_reply
            if conf.api.lost_answer_timeout else None,
            answer_again=lost_answers.of_call, watch=metrics.RpcCalls)
        self.placement = placement.PlacementSync(conf)
        # After a database outage everybody looks down for a while.
        self.own_beats = own_beats.OwnBeats(
            conf.conductor.service_down_after,
            max(conf.conductor.service_down_after,
                conf.conductor.host_down_after))
        self.liveness = host_liveness.HostLiveness(
            conf.conductor.host_down_after)
        self.metrics = metrics_server.MetricsServer(conf, self.uuid)
        # Committed changes of the API's read model, cast to its processes.
        self.read_model = read_model.Publisher(
            conf.conductor.read_model_announce_spacing)
        self._periodic = periodic.Periodic('conductor-periodics', [
            (conf.conductor.service_heartbeat_interval, self._beat),
            (conf.conductor.service_heartbeat_interval,
             self._fail_interrupted_work),
            (conf.conductor.service_heartbeat_interval, self.liveness.sweep),
            (PRUNE_INTERVAL, self._prune),
            # Lease windows' boundaries (conductor/leases.py).
            (conf.leases.check_interval, self.manager.leases.run),
            # Fleet rollouts' steps and takeovers (conductor/rollouts.py).
            (conf.rollouts.interval, self.manager.rollouts.run),
        ])

    def _beat(self):
        self.own_beats.beat(lambda: conductors.beat(self.uuid, self.host))

    def _fail_interrupted_work(self):
        if self.own_beats.may_judge():
            self.manager._fail_interrupted_work()
        else:
            LOG.debug('Not failing interrupted work yet: this conductor '
                      'beats again since less than %ss', self.own_beats.grace)

    def _prune(self):
        availability.prune(self.conf.conductor.availability_changes_retention)
        changes.prune(self.conf.conductor.change_log_retention)
        usage.prune(self.conf.conductor.usage_retention)

    def start(self):
        # Alive before accepting work, so no sweep takes ours for orphaned.
        self._beat()
        self.read_model.start()
        generations.subscribe(self.read_model.changed)
        self.heartbeats.start()
        self.heartbeat_stream.start()
        self._server.start()
        self.placement.start()
        self._periodic.start()
        self.metrics.start()
        LOG.info('Conductor on %s listening on topic %s', self.host,
                 rpcapi.TOPIC)

    def first_runs_done(self):
        """Whether each periodic task ended its first run, which starts
        at once: what a test acts on must not race it."""
        return self._periodic.ran_each_once() and \
            self.placement.first_run_done()

    def stop(self):
        self.metrics.stop()
        self._periodic.stop()
        self.placement.stop()
        self._server.stop()
        self._server.wait()
        self.heartbeat_stream.stop()
        self.heartbeats.stop()
        self.workers.shutdown(wait=True)
        generations.unsubscribe(self.read_model.changed)
        self.read_model.stop()
        # Whatever is left unfinished is now anyone's to fail at once; if
        # the database is gone too, the others see this conductor's
        # heartbeat stop instead.
        try:
            conductors.remove(self.uuid)
        except Exception as error:
            LOG.warning('Could not remove this conductor from the '
                        'conductors table: %s', error)
        LOG.info('Conductor on %s stopped', self.host)
