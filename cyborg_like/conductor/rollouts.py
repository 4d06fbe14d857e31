"""Fleet rollouts on the conductor: the periodic that carries each rollout
through its canary and waves, and rolls it back (docs/rollouts.md).

Every ``[rollouts] interval`` each conductor takes over the rollouts whose
owner stopped heartbeating (db/rollouts.py ``claim``) and steps those it
owns. A step, in a constant number of queries:

1. targets whose operation ended move on (``in_progress -> gating`` or
   ``failed``; a rollback's ``rolling_back -> rolled_back`` or ``failed``);
2. the health gate: a changed target whose device turned unhealthy or left
   service, or whose region does not read back the image, fails; one that
   stayed well ``gate_seconds`` is done;
3. a failure in the canary, or more failures than the budget, stops the
   rollout: it goes ``rolling_back`` and puts back the targets it changed,
   latest wave first, within the same bounds;
4. a wave whose targets all ended lets the next begin; the last one ends
   the rollout;
5. targets of the current wave start, as many as ``max_unavailable``
   (fleet) and ``max_unavailable_per_host`` allow; those a workload holds
   are skipped (retried while the rollout runs) or waited for.

Targets start through the existing operations (a region's programming,
the manager's ``_program`` worker; a card's firmware flash,
``_run_drained``; a host's driver operation, ``DriverOperations.
carry_out``), never by a path of their own to the agents.
"""

from oslo_log import log as logging

from cyborg_like.common import context as context_lib
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.conductor import metrics
from cyborg_like.conductor import notifications
from cyborg_like.conductor import rollout_strategy
from cyborg_like.db import hosts
from cyborg_like.db import rollout_kinds
from cyborg_like.db import rollout_targets as targets
from cyborg_like.db import rollouts

LOG = logging.getLogger(__name__)

CHANGED = 'accelerator.rollout.state.changed'


class Rollouts:
    def __init__(self, conf, workers, starters, conductor_uuid,
                 notifier=None, clock=None):
        """``starters``: {kind: ``start(context, operation_uuid, job)``},
        what hands an accepted operation of the kind (program, firmware)
        to a worker (the manager's)."""
        self.conf = conf
        self._workers = workers
        self._starters = starters
        self.conductor_uuid = conductor_uuid
        self.notifier = notifier
        self.clock = clock or hosts.utcnow

    # The API's requests.
    def create(self, context, values, dry_run=False):
        if values['kind'] not in rollout_kinds.KINDS:
            raise exception.Invalid('Rollouts of kind %s are not supported '
                                    'yet.' % values['kind'])
        if values['kind'] == rollout_kinds.DRIVER:
            # A driver family's version, kept as the rollout's image.
            values = dict(
                {k: v for k, v in values.items()
                 if k not in ('driver', 'version', 'parameters',
                              'timeout')},
                image=rollout_kinds.driver_image(values['driver'],
                                                 values['version']),
                options={k: values[k] for k in ('parameters', 'timeout')
                         if values.get(k)})
        if dry_run:
            return dict(rollouts.plan(values['kind'], values['image'],
                                      values.get('selector') or {},
                                      values.get('strategy') or {},
                                      rollout_strategy.resolve),
                        dry_run=True)
        rollout = rollouts.create(values, context.project_id,
                                  self.conductor_uuid, self.clock(),
                                  rollout_strategy.resolve)
        LOG.info('Rollout %s of %s %s over %d targets started',
                 rollout['uuid'], rollout['kind'], rollout['image'],
                 rollout['targets']['total'])
        self._told(rollout, None)
        self._wave(notifications.WAVE_START, rollout, 0)
        return rollout

    def act(self, context, uuid, action):
        """pause, resume, abort, or rollback (of a finished rollout)."""
        before = rollouts.get(uuid)
        if action == states.ROLLBACK:
            # The rollback is this conductor's to carry.
            rollout = rollouts.apply(uuid, action, now=self.clock(),
                                     reason=_asked(action))
            rollouts.claim(self.conductor_uuid,
                           self.conf.conductor.service_down_after)
        else:
            rollout = rollouts.apply(uuid, action, now=self.clock(),
                                     reason=_asked(action))
        self._told(rollout, before['state'])
        return rollout

    # The periodic.
    def run(self):
        owned = rollouts.claim(self.conductor_uuid,
                               self.conf.conductor.service_down_after)
        targets.sync_operations(self.clock(),
                                self.conf.rollouts.interrupted_retries)
        for rollout_id, uuid in owned:
            try:
                self.step(rollout_id)
            except Exception:
                LOG.exception('Step of rollout %s failed; retrying at the '
                              'next run', uuid)
        metrics.rollout_run()

    def step(self, rollout_id):
        rollout = rollouts.load(rollout_id)
        if rollout['state'] == states.ROLLOUT_RUNNING:
            self._forward(rollout)
        elif rollout['state'] in (states.ROLLING_BACK,
                                  states.MANUAL_ROLLBACK):
            self._back(rollout)

    def _forward(self, rollout):
        strategy, now = rollout['strategy'], self.clock()
        targets.gate(rollout['id'], strategy['gate_seconds'], now,
                     rollout['kind'], rollout['image'])
        waves, failed, busy_hosts = targets.progress(rollout['id'])
        failures = sum(w.get(states.TARGET_FAILED, 0) for w in waves.values())
        if failed is not None and (failed['wave'] == 0 or
                                   failures > strategy['failure_budget']):
            self._stop(rollout, failed, failures)
            return
        wave = rollout['current_wave']
        while _ended(waves.get(wave, {})):
            if wave >= rollout['waves']:
                self._end(rollout, waves)
                return
            self._wave(notifications.WAVE_END, rollout, wave)
            wave += 1
            rollouts.advance(rollout['id'], wave, now)
            LOG.info('Rollout %s: wave %d begins', rollout['uuid'], wave)
            self._wave(notifications.WAVE_START, rollout, wave)
            metrics.rollout_wave(rollout['uuid'])
            rollout['wave_started_at'] = now
        self._start(rollout, wave, busy_hosts, now)

    def _start(self, rollout, wave, busy_hosts, now):
        strategy = rollout['strategy']
        room = strategy['max_unavailable'] - sum(busy_hosts.values())
        if room <= 0:
            return
        skip = strategy['workloads'] == rollout_kinds.SKIP
        include = rollout_kinds.includes_busy(rollout['kind'], strategy)
        waited_out = (now - rollout['wave_started_at']).total_seconds() \
            >= strategy['wait_timeout']
        found = targets.candidates(rollout['id'], wave, room * 4 + 16,
                                   skip, rollout['kind'], rollout['image'])
        to_skip, chosen = [], []
        for target in found:
            if target.busy and not include:
                if target.state == states.TARGET_PENDING and (
                        skip or waited_out):
                    to_skip.append(target.id)
                continue
            if len(chosen) >= room or busy_hosts.get(
                    target.hostname, 0) >= \
                    strategy['max_unavailable_per_host']:
                continue
            busy_hosts[target.hostname] = \
                busy_hosts.get(target.hostname, 0) + 1
            chosen.append(target.id)
        targets.skip_busy(to_skip, 'A workload holds it (bound or being '
                           'released)%s; retried while the rollout runs.'
                           % ('' if skip else ' past wait_timeout'))
        self._launch(rollout, chosen, lambda target_id: targets.begin(
            target_id, rollout['kind'], rollout['image'],
            rollout['project_id'], self.conductor_uuid, now, force=include,
            options=rollout['options']))

    def _launch(self, rollout, target_ids, begin):
        context = context_lib.get_admin_context()
        for target_id in target_ids:
            try:
                with self._workers.reserve(1) as submit:
                    try:
                        started = begin(target_id)
                    except exception.CyborgLikeException as error:
                        # Taken by a workload or an operation meanwhile.
                        targets.note(target_id, 'Not started now: %s'
                                      % error.message)
                        continue
                    if started is not None:
                        job, operation = started
                        submit(self._starters[rollout['kind']], context,
                               operation['uuid'], job,
                               carries=operation['uuid'])
                        metrics.rollout_target_started(rollout['uuid'])
            except exception.Overloaded:
                LOG.info('Rollout %s: the work queue is full; the next '
                         'targets start at the next run', rollout['uuid'])
                return

    def _stop(self, rollout, failed, failures):
        reason = ('Target %(target_uuid)s on host %(hostname)s (wave '
                  '%(wave)s) failed: %(reason)s' % failed)
        if failed['wave'] == 0:
            reason = 'The canary failed. ' + reason
        else:
            reason = ('%d targets failed, more than the failure budget of '
                      '%d. %s' % (failures,
                                  rollout['strategy']['failure_budget'],
                                  reason))
        try:
            view = rollouts.apply(rollout['uuid'], states.STOP, reason,
                                  now=self.clock(),
                                  rollout_id=rollout['id'])
        except exception.Conflict:
            return      # paused or aborted meanwhile
        LOG.warning('Rollout %s stopped; rolling back: %s', rollout['uuid'],
                    reason)
        self._told(view, states.ROLLOUT_RUNNING)

    def _end(self, rollout, waves):
        counts = {}
        for wave in waves.values():
            for state, count in wave.items():
                counts[state] = counts.get(state, 0) + count
        reason = ', '.join('%d %s' % (n, s) for s, n in sorted(
            counts.items()))
        try:
            view = rollouts.apply(rollout['uuid'], states.SUCCEED, reason,
                                  now=self.clock(),
                                  rollout_id=rollout['id'])
        except exception.Conflict:
            return
        LOG.info('Rollout %s succeeded: %s', rollout['uuid'], reason)
        self._wave(notifications.WAVE_END, view, rollout['current_wave'])
        self._told(view, states.ROLLOUT_RUNNING)

    def _back(self, rollout):
        strategy, now = rollout['strategy'], self.clock()
        waves, _failed, busy_hosts = targets.progress(rollout['id'])
        room = strategy['max_unavailable'] - sum(busy_hosts.values())
        left = targets.to_revert(rollout['id'], max(room, 1) * 4 + 16)
        if not left and not busy_hosts and not any(
                w.get(states.IN_PROGRESS) for w in waves.values()):
            event = states.FINISH_ROLLBACK \
                if rollout['state'] == states.ROLLING_BACK \
                else states.FINISH_MANUAL_ROLLBACK
            try:
                view = rollouts.apply(rollout['uuid'], event,
                                      now=now, rollout_id=rollout['id'])
            except exception.Conflict:
                return
            LOG.info('Rollout %s rolled back', rollout['uuid'])
            self._wave(notifications.ROLLED_BACK, view,
                       rollout['current_wave'])
            self._told(view, rollout['state'])
            return
        chosen = []
        for target in left:
            if len(chosen) >= room or busy_hosts.get(target.hostname, 0) \
                    >= strategy['max_unavailable_per_host']:
                continue
            busy_hosts[target.hostname] = \
                busy_hosts.get(target.hostname, 0) + 1
            chosen.append(target.id)
        self._launch(rollout, chosen, lambda target_id: targets.begin_revert(
            target_id, rollout['kind'], rollout['project_id'],
            self.conductor_uuid, now))

    def _wave(self, event_type, rollout, wave):
        """A versioned notification of ``rollout`` (a view or a loaded
        row) at ``wave``."""
        notifications.emit(
            self.notifier, context_lib.get_admin_context(), event_type,
            {'rollout_uuid': rollout['uuid'], 'kind': rollout['kind'],
             'image': rollout['image'], 'state': rollout['state'],
             'wave': wave, 'waves': rollout['waves'],
             'reason': rollout.get('reason')})

    def _told(self, rollout, before):
        metrics.rollout_state(rollout['state'])
        if self.notifier is None:
            return
        payload = {'rollout_uuid': rollout['uuid'], 'kind': rollout['kind'],
                   'image': rollout['image'], 'state': rollout['state'],
                   'previous_state': before, 'reason': rollout['reason'],
                   'targets': rollout['targets']}
        context = context_lib.get_admin_context()
        if rollout['state'] in (states.ROLLING_BACK, states.ROLLOUT_FAILED):
            self.notifier.error(context, CHANGED, payload)
        else:
            self.notifier.info(context, CHANGED, payload)


def _ended(counts):
    """No target of the wave is left to start or under way."""
    return not any(counts.get(s) for s in (
        states.TARGET_PENDING, states.IN_PROGRESS, states.GATING))


def _asked(action):
    """The reason an operator's ``action`` gives its rollout: each says
    what the rollout does now (a resumed one runs, with no reason)."""
    return {states.PAUSE: 'Paused by an operator.',
            states.RESUME: None,
            states.ABORT: 'Aborted by an operator.',
            states.ROLLBACK: 'Rolled back by an operator.'}[action]
