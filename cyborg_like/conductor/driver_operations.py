"""Driver operations, conductor side: accept, wait for bound accelerator
requests to go if asked, hand the playbook to the host's agent, and apply
what the agent reports (db/driver_operations.py holds the rules)."""

import time

from oslo_log import log as logging

from cyborg_like.common import context as context_lib
from cyborg_like.common import states
from cyborg_like.conductor import metrics
from cyborg_like.conductor import notifications
from cyborg_like.db import driver_operations as db
from cyborg_like.db import operations

LOG = logging.getLogger(__name__)

# How often a wait for releases looks again (and shows it is alive).
RELEASE_POLL = 0.5


class DriverOperations:
    def __init__(self, conf, agent_api, workers, conductor_uuid, reason,
                 notifier=None):
        self.conf = conf
        self.agent_api = agent_api
        self._workers = workers
        self.conductor_uuid = conductor_uuid
        self._reason = reason       # error -> text for the operation
        self.notifier = notifier

    def start(self, context, hostname, request):
        with self._workers.reserve(1) as submit:
            operation, job = db.start(hostname, request, context.project_id,
                                      self.conductor_uuid)
            submit(self.carry_out, context, operation['uuid'], job,
                   request.get('wait_for_release'),
                   carries=operation['uuid'])
        LOG.info('Driver operation %s accepted: %s %s on %s%s',
                 operation['uuid'], request['action'], request['family'],
                 hostname, ' (forced)' if request.get('force') else '')
        return operation

    def cancel(self, context, uuid):
        running = operations.get(uuid)['state'] == states.RUNNING
        operation = db.request_cancel(uuid)
        if running:
            # A pending one is ended by its worker; a running one by its
            # agent, told now (and by its next progress report anyway).
            self.agent_api.cancel_playbook(context, operation['hostname'],
                                           uuid)
        return operation

    def progress(self, uuid, batch):
        return db.record_progress(uuid, batch)

    def finish(self, uuid, outcome):
        if outcome.get('status') == 'not_started':
            state = operations.get(uuid)['state']
            event = states.ABORT if state == states.CANCELLING \
                else states.FAIL
            db.end_untouched(uuid, event,
                             'Cancelled before its playbook started.')
            return
        ended = db.finish(uuid, outcome)
        if ended is None:
            LOG.info('Driver operation %s had already ended; its agent\'s '
                     'report (%s) changes nothing', uuid,
                     outcome.get('status'))
        else:
            LOG.info('Driver operation %s %s', uuid, ended['state'])
            metrics.operation_finished(ended['type'], ended['state'])
            notifications.operation_told(
                self.notifier, context_lib.get_admin_context(), uuid,
                notifications.OPERATION_END)

    def carry_out(self, context, uuid, job, wait=None):
        """A worker's: (wait for releases, then) start the playbook of
        an accepted operation (a rollout's target's too,
        conductor/rollouts.py)."""
        if wait and not self._wait_for_releases(uuid, wait):
            return
        if not operations.apply(uuid, states.START):
            # Cancelled (or failed by the sweep) before it started.
            db.end_untouched(uuid, states.ABORT,
                             'Cancelled before its playbook started.')
            return
        notifications.operation_told(self.notifier, context, uuid,
                                     notifications.OPERATION_START)
        try:
            self.agent_api.start_playbook(context, job['hostname'], job,
                                          self.conf.conductor.agent_timeout)
        except Exception as error:
            reason = self._reason(error)
            LOG.warning('Driver operation %s: the agent did not start its '
                        'playbook: %s', uuid, reason)
            db.end_untouched(uuid, states.FAIL,
                             'The agent did not start the playbook: %s'
                             % reason)
            notifications.operation_told(self.notifier, context, uuid,
                                         notifications.OPERATION_END)

    def _wait_for_releases(self, uuid, wait):
        """Until the accelerator requests bound to the drained devices
        are gone (the drain keeps new ones out); False when the operation
        ended meanwhile (cancelled, timed out, failed by the sweep)."""
        deadline = time.monotonic() + wait
        while True:
            holding = db.holding_arqs(uuid)
            if not holding:
                return True
            state = operations.get(uuid)['state']
            if state == states.CANCELLING:
                db.end_untouched(uuid, states.ABORT, 'Cancelled while '
                                 'waiting for bound accelerator requests '
                                 'to be released.')
                return False
            if state != states.PENDING:
                return False
            if time.monotonic() > deadline:
                db.end_untouched(uuid, states.FAIL, (
                    '%d accelerator request(s) were still bound after '
                    '%d seconds: %s.') % (len(holding), wait,
                                           ', '.join(holding)))
                return False
            db.record_progress(uuid, {
                'task': 'Waiting for the release of %d accelerator '
                        'request(s)' % len(holding),
                'reported_at': time.time()})
            time.sleep(RELEASE_POLL)
