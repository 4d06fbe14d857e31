"""The agent's RPC endpoint: what the conductor may ask of this host."""

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import bitstreams
from cyborg_like.agent import rpcapi
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.conf import CONF
from cyborg_like.drivers import base

LOG = logging.getLogger(__name__)


@rpc.callers_errors_expected
class AgentManager:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, tracker):
        self.tracker = tracker

    def resync_inventory(self, context):
        LOG.info('Conductor asked for the whole inventory (request %s)',
                 context.request_id)
        self.tracker.update_inventory(force=True)

    def prepare_attach_handle(self, context, job):
        """Program the region when asked, then prepare the handle.

        Returns the bitstream id now on the region when it was programmed.
        """
        driver = self._driver(job['driver_name'])
        programmed = None
        if job.get('bitstream_id'):
            programmed = self._program(driver, job)
        if isinstance(driver, base.AttachPreparing):
            driver.prepare_attach_handle(job['controlpath_id'],
                                         job['attach_handle'])
        return programmed

    def program(self, context, job):
        """Program a region outside any binding (an operator's request)."""
        return self._program(self._driver(job['driver_name']), job)

    def _program(self, driver, job):
        if not isinstance(driver, base.Programmable):
            raise exception.DriverError(
                driver=job['driver_name'],
                reason='it cannot program bitstreams')
        path = bitstreams.locate(CONF.agent.bitstream_dir,
                                 job['bitstream_id'])
        LOG.info('Programming %s of %s with bitstream %s',
                 job['deployable_name'], job['controlpath_id'],
                 job['bitstream_id'])
        driver.program(job['controlpath_id'], job['deployable_name'], path,
                       job['bitstream_id'])
        return job['bitstream_id']

    def release_attach_handle(self, context, released):
        driver = self._driver(released['driver_name'])
        if isinstance(driver, base.AttachPreparing):
            try:
                driver.release_attach_handle(released['controlpath_id'],
                                             released['attach_handle'])
            except Exception:
                LOG.exception('Could not release attach handle %s',
                              released['attach_handle'])

    def _driver(self, name):
        try:
            return self.tracker.drivers[name]
        except KeyError:
            raise exception.DriverError(
                driver=name, reason='not enabled on this host')
