"""Running driver playbooks on this host through ansible-runner.

One run at a time per host, in a thread of its own (never on an RPC
thread): the conductor's ``start_playbook`` call only hands the job over.
Each run gets a private data directory named by its operation, talks to
this host over the local connection, and is stopped by its timeout or a
cancellation. While it runs, a reporter thread sends the task events
batched every ``[agent] playbook_progress_interval`` seconds; the
conductor's answer tells when the operation was cancelled or failed there
meanwhile, which stops the run too. At the end the host is discovered
again and the outcome (status, failed task, recap, the playbook's
``cyborg_like`` stats) goes to the conductor.
"""

import os
import sys
import threading
import time

import ansible_runner
import jsonschema
from oslo_log import log as logging

from cyborg_like.agent import leftovers
from cyborg_like.agent import playbook_artifacts
from cyborg_like.agent import playbook_events
from cyborg_like.agent import playbooks
from cyborg_like.common import context as ctx
from cyborg_like.common import exception

LOG = logging.getLogger(__name__)

# The conductor's states in which the run should go on.
GOING_ON = ('running',)


def playbook_for(conf, family, action):
    """The entry playbook of ``action`` (``[agent] playbook_dir`` or the
    playbooks/ shipped with cyborg_like)."""
    return playbooks.playbook_path(family, action,
                                   root=conf.agent.playbook_dir)


class Run:
    def __init__(self, job):
        self.job = job
        self.uuid = job['operation_uuid']
        self.cancelled = threading.Event()
        self.collector = playbook_events.Collector()
        self.done = threading.Event()
        self.thread = None


class PlaybookRunner:
    def __init__(self, host, conf, conductor_api, tracker):
        self.host = host
        self.conf = conf
        self.conductor_api = conductor_api
        self.tracker = tracker
        self._lock = threading.Lock()
        self._run = None
        self._stopping = threading.Event()

    def start(self, job):
        """Start ``job``'s playbook in the background; refused while
        another runs (the conductor allows one per host anyway)."""
        try:
            path = playbook_for(self.conf, job['family'], job['action'])
            # Checked at the API too; an agent runs nothing it was not
            # meant to, whoever sent the job.
            jsonschema.validate(job['parameters'], playbooks.schema(
                job['family'], job['action']))
        except (FileNotFoundError, ValueError,
                jsonschema.ValidationError) as error:
            raise exception.DriverError(driver=job['family'], reason=str(
                getattr(error, 'message', error)))
        with self._lock:
            if self._run is not None:
                if self._run.uuid == job['operation_uuid']:
                    return      # the same job, sent again
                raise exception.PlaybookRunning(hostname=self.host,
                                                operation=self._run.uuid)
            run = self._run = Run(job)
        run.thread = threading.Thread(
            target=self._carry_out, args=(run, path), daemon=True,
            name='playbook-%s' % run.uuid)
        run.thread.start()
        LOG.info('Driver operation %s: running %s (%s %s %s)', run.uuid,
                 path, job['action'], job['family'], job.get('version'))

    def cancel(self, operation_uuid):
        """Stop the run of ``operation_uuid``; False when it is not
        running here."""
        with self._lock:
            run = self._run
        if run is None or run.uuid != operation_uuid:
            return False
        run.cancelled.set()
        return True

    def stop(self, wait=10.0):
        """Agent shutdown: cancel the run and give it ``wait`` seconds."""
        self._stopping.set()
        with self._lock:
            run = self._run
        if run is not None:
            run.cancelled.set()
            run.thread.join(wait)

    def running(self):
        with self._lock:
            return self._run.uuid if self._run else None

    def _carry_out(self, run, path):
        try:
            outcome = self._play(run, path)
        except Exception as error:
            LOG.exception('Driver operation %s: the run broke', run.uuid)
            outcome = {'status': 'error',
                       'reason': '%s: %s' % (type(error).__name__, error)}
        outcome.setdefault('last_task', run.collector.task)
        self._rediscover(run)
        with self._lock:
            self._run = None
        self._tell_result(run, outcome)
        playbook_artifacts.prune(
            self.conf.agent.playbook_work_dir,
            self.conf.agent.playbook_keep_runs,
            self.conf.agent.playbook_artifacts_max_bytes,
            running={self.running()} - {None})

    def _play(self, run, path):
        # Absolute: the leftovers of the run are found by this path.
        data_dir = os.path.abspath(os.path.join(
            self.conf.agent.playbook_work_dir, run.uuid))
        os.makedirs(data_dir, exist_ok=True)
        # Told first: a run cancelled before it began changes nothing.
        self._send_progress(run)
        if run.cancelled.is_set():
            return {'status': 'not_started'}
        reporter = threading.Thread(target=self._report_progress,
                                    args=(run,), daemon=True,
                                    name='progress-%s' % run.uuid)
        reporter.start()
        try:
            runner = ansible_runner.run(
                private_data_dir=data_dir, ident='run', playbook=path,
                inventory=_local_inventory(),
                extravars=_extravars(run.job),
                envvars=_envvars(),
                timeout=run.job.get('timeout') or
                self.conf.agent.playbook_timeout,
                event_handler=run.collector,
                cancel_callback=run.cancelled.is_set,
                quiet=True)
        finally:
            run.done.set()
            self._reap(run, data_dir)
            reporter.join()
        collector = run.collector
        return {
            'status': runner.status, 'rc': runner.rc,
            'recap': playbook_events.recap(runner.stats),
            'failed_task': collector.failed_task,
            'versions': collector.stats.get(playbooks.STATS_KEY),
            'artifacts': os.path.join(data_dir, 'artifacts', 'run'),
        }

    @staticmethod
    def _reap(run, data_dir):
        """A stopped run's task may still be running (leftovers.py): it
        must not change the host after the operation has ended."""
        killed = leftovers.reap(data_dir)
        if killed:
            LOG.warning('Driver operation %s: killed %d process(es) its '
                        'stopped playbook left running (pids %s)',
                        run.uuid, len(killed),
                        ', '.join(map(str, sorted(killed))))

    def _report_progress(self, run):
        """Every interval, send what happened (or that it still runs);
        stop the run if the conductor no longer wants it."""
        interval = self.conf.agent.playbook_progress_interval
        while not run.done.wait(interval):
            self._send_progress(run)
        self._send_progress(run)        # the last events before the end

    def _send_progress(self, run):
        batch = run.collector.take()
        batch['reported_at'] = time.time()
        try:
            state = self.conductor_api.report_driver_progress(
                ctx.get_admin_context(), run.uuid, batch)
        except Exception as error:
            # Lost events are only progress: the counts at the end come
            # from the recap. The run goes on.
            LOG.warning('Driver operation %s: progress not reported (%s)',
                        run.uuid, error)
            return
        if state not in GOING_ON and not run.cancelled.is_set():
            LOG.info('Driver operation %s is %s at the conductor; stopping '
                     'its playbook', run.uuid, state)
            run.cancelled.set()

    def _rediscover(self, run):
        """The driver changed: what the host has now goes to the
        conductor before the operation ends, so a success un-drains the
        devices as they are now."""
        try:
            self.tracker.update_inventory(force=True)
        except Exception:
            LOG.exception('Driver operation %s: discovery after the run '
                          'failed; the discovery loop will try again',
                          run.uuid)

    def _tell_result(self, run, outcome):
        deadline = time.monotonic() + self.conf.agent.playbook_result_retry_for
        pause = 0.5
        while True:
            try:
                self.conductor_api.finish_driver_operation(
                    ctx.get_admin_context(), run.uuid, outcome)
                LOG.info('Driver operation %s ended: %s', run.uuid,
                         outcome['status'])
                return
            except Exception as error:
                if time.monotonic() + pause > deadline or \
                        self._stopping.is_set():
                    LOG.error('Driver operation %s: could not report its '
                              'end (%s); the conductor fails it when it '
                              'stops hearing of it', run.uuid, error)
                    return
                LOG.warning('Driver operation %s: reporting its end failed '
                            '(%s); trying again', run.uuid, error)
            time.sleep(pause)
            pause = min(pause * 2, 10.0)


def _local_inventory():
    # This host, over the local connection, with the agent's own Python
    # (which has the modules the roles and verify use).
    return ('localhost ansible_connection=local '
            'ansible_python_interpreter=%s\n' % sys.executable)


def _extravars(job):
    return dict(playbooks.extravars(job['family'], job['action'],
                                    job['parameters']),
                cyborg_like_operation=job['operation_uuid'],
                cyborg_like_hostname=job['hostname'])


def _envvars():
    # ansible-playbook is beside the agent's interpreter (its venv), which
    # may not be on the service's PATH.
    bindir = os.path.dirname(sys.executable)
    return {'PATH': bindir + os.pathsep + os.environ.get('PATH', ''),
            'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_RETRY_FILES_ENABLED': '0'}
