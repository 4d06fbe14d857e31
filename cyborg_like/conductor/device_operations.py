"""Operations on one device or region (docs/design.md, "Operations"):
programming a bitstream, flashing firmware and applying a MIG layout.
Each is accepted as an operation row and carried out in the background
by the host's agent; flashes and MIG layouts drain the device first and
leave it drained when they fail.
"""

import contextlib
import time

from oslo_log import log as logging

from cyborg_like.common import context as context_lib
from cyborg_like.common import states
from cyborg_like.conductor import failure
from cyborg_like.conductor import images
from cyborg_like.conductor import metrics
from cyborg_like.conductor import notifications
from cyborg_like.db import deployables
from cyborg_like.db import drained
from cyborg_like.db import firmware
from cyborg_like.db import mig_layouts
from cyborg_like.db import operations

LOG = logging.getLogger(__name__)


class DeviceOperations:
    def __init__(self, conf, agent_api, workers, conductor_uuid, stores,
                 notifier=None):
        self.conf = conf
        self.agent_api = agent_api
        # Operations finish here, after the RPC call that accepted them
        # has answered (a bounded workqueue.WorkQueue).
        self._workers = workers
        # The work accepted here names this conductor (db/conductors.py).
        self.conductor_uuid = conductor_uuid
        # Catalog image stores, for the URLs agents fetch images from.
        self.stores = stores
        self.notifier = notifier

    def program(self, context, uuid, bitstream_id):
        """Start programming; the returned operation tells how it ends."""
        with self._workers.reserve(1) as submit:
            job, operation, deployable = deployables.start_program(
                uuid, bitstream_id, context.project_id, self.conductor_uuid)
            submit(self._program, context, operation['uuid'], job,
                   time.monotonic(), carries=operation['uuid'])
        return {'deployable': deployable, 'operation': operation}

    def _program(self, context, operation_uuid, job, accepted):
        if not operations.apply(operation_uuid, states.START):
            return      # failed by the sweep before it ran
        with self._told(context, operation_uuid):
            self._program_now(context, operation_uuid, job, accepted)

    def _program_now(self, context, operation_uuid, job, accepted):
        what = _programming(job, operation_uuid)
        LOG.info('Programming %s started', what)
        try:
            self.agent_api.program(context, job['hostname'],
                                   images.with_url(self.stores, job),
                                   self.conf.conductor.agent_timeout)
        except Exception as error:
            LOG.warning('Programming %s failed after %.1f s: %s', what,
                        time.monotonic() - accepted, failure.reason(error))
            operations.apply(operation_uuid, states.FAIL,
                             failure.reason(error))
            metrics.operation_finished('program', states.FAILED)
            return
        if not deployables.finish_program(operation_uuid,
                                          job['deployable_uuid'],
                                          job['bitstream_id']):
            # What the region holds now is the agent's to say.
            LOG.warning('Programming %s ended after its operation had been '
                        'failed; its region is what host %s reads back',
                        what, job['hostname'])
            try:
                self.agent_api.resync_inventory(context, job['hostname'])
            except Exception as error:   # noqa: BLE001 - its next report
                LOG.warning('Could not ask host %s for its inventory: %s',
                            job['hostname'], error)
            return
        metrics.operation_finished('program', states.SUCCEEDED)
        LOG.info('Programming %s finished in %.1f s', what,
                 time.monotonic() - accepted)

    # Firmware (1.9): an operation on a device, not a region.
    def flash(self, context, uuid, image_uuid):
        """Drain the device and start flashing it with catalog image
        ``image_uuid``; the returned operation tells how it ends."""
        with self._workers.reserve(1) as submit:
            job, operation, device = firmware.start_flash(
                uuid, image_uuid, context.project_id, self.conductor_uuid)
            submit(self.flash_job, context, operation['uuid'], job,
                   carries=operation['uuid'])
        return {'device': device, 'operation': operation}

    def flash_job(self, context, operation_uuid, job):
        self._run_drained(
            operation_uuid, job, 'Flashing device %s with image %s' % (
                job['device_uuid'], job['image']['uuid']),
            lambda: self.agent_api.flash_firmware(
                context, job['hostname'], images.with_url(self.stores, job),
                self.conf.conductor.firmware_timeout),
            firmware.TYPE)

    # MIG layouts (1.11): an operation on a GPU, drained like a flash.
    def apply_mig_layout(self, context, uuid, layout):
        """Drain the GPU and start cutting it into ``layout`` (MIG profile
        names; [] for the whole GPU)."""
        with self._workers.reserve(1) as submit:
            job, operation, device = mig_layouts.start(
                uuid, layout, context.project_id, self.conductor_uuid)
            submit(self._run_drained, operation['uuid'], job,
                   'Applying MIG layout [%s] to GPU %s' % (
                       ', '.join(layout), job['device_uuid']),
                   lambda: self.agent_api.apply_mig_layout(
                       context, job['hostname'], job,
                       self.conf.conductor.mig_layout_timeout),
                   mig_layouts.TYPE, carries=operation['uuid'])
        return {'device': device, 'operation': operation}

    # What a rollout's targets start (conductor/rollouts.py).
    def program_for_rollout(self, context, operation_uuid, job):
        self._program(context, operation_uuid, job, time.monotonic())

    def _run_drained(self, operation_uuid, job, what, work, kind=None):
        """Run ``work()`` (the agent's call) for a draining operation (of
        type ``kind``) and record how it ended."""
        if not operations.apply(operation_uuid, states.START):
            return      # failed by the sweep before it ran
        with self._told(context_lib.get_admin_context(), operation_uuid):
            self._drained_work(operation_uuid, job, what, work, kind)

    def _drained_work(self, operation_uuid, job, what, work, kind):
        started = time.monotonic()
        try:
            found = work()
        except Exception as error:
            LOG.warning('%s on host %s failed after %.1f s (operation %s); '
                        'the device stays drained: %s', what,
                        job['hostname'], time.monotonic() - started,
                        operation_uuid, failure.reason(error))
            drained.fail(operation_uuid, failure.reason(error))
            metrics.operation_finished(kind, states.FAILED)
            return
        if not drained.finish(operation_uuid, job['device_uuid'], found):
            LOG.warning('%s ended after its operation %s had been failed; '
                        'the device stays drained', what, operation_uuid)
        else:
            LOG.info('%s succeeded in %.1f s (operation %s)', what,
                     time.monotonic() - started, operation_uuid)
            metrics.operation_finished(kind, states.SUCCEEDED)

    @contextlib.contextmanager
    def _told(self, context, operation_uuid):
        """operation.start now, operation.end once the block is done
        (however it ended: the payload says)."""
        notifications.operation_told(self.notifier, context, operation_uuid,
                                     notifications.OPERATION_START)
        try:
            yield
        finally:
            notifications.operation_told(
                self.notifier, context, operation_uuid,
                notifications.OPERATION_END)

    def fail_interrupted(self, limits):
        """Fail the operations nobody will finish (``limits``: binding.
        interrupted_limits; flashes and MIG layouts get twice their own
        timeouts)."""
        for uuid in operations.fail_interrupted(
                *limits, older_than_by_type={
                    firmware.TYPE: 2 * self.conf.conductor.firmware_timeout,
                    mig_layouts.TYPE:
                        2 * self.conf.conductor.mig_layout_timeout}):
            LOG.warning('Operation %s was interrupted; failed it', uuid)

    def fail_lost(self, uuids):
        """Fail these operations of this conductor that no job carries
        (conductor/lost_work.py); answers those failed."""
        failed = operations.fail_lost(uuids)
        for uuid in failed:
            LOG.warning('Operation %s was carried by no job of this '
                        'conductor (lost to an error logged before); '
                        'failed it', uuid)
        return failed


def _programming(job, operation_uuid):
    return 'deployable %s (%s) on host %s with bitstream %s (operation %s)' \
        % (job['deployable_name'], job['deployable_uuid'], job['hostname'],
           job['bitstream_id'], operation_uuid)
