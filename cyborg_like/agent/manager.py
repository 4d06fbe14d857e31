"""The agent's RPC endpoint: what the conductor may ask of this host."""

import time

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import bitstreams
from cyborg_like.agent import image_cache
from cyborg_like.agent import region_order
from cyborg_like.agent import rpcapi
from cyborg_like.common import describe
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.drivers import base

LOG = logging.getLogger(__name__)


@rpc.callers_errors_expected
class AgentManager:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, conf, tracker, images=None, playbooks=None):
        self.conf = conf
        self.tracker = tracker
        # agent/playbook_runner.PlaybookRunner: driver operations.
        self.playbooks = playbooks
        # Catalog images fetched by id (image_cache.py).
        self.images = images or image_cache.ImageCache(
            conf.agent.image_cache_dir,
            conf.agent.image_cache_size * 1024 * 1024,
            image_cache.http_fetcher(conf))
        # One job at a time per region, never an older operation's last.
        self.regions = region_order.RegionOrder()

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
        if job.get('image'):
            # A catalog image: fetched (or found in the cache) and its
            # sha256 verified before anything is programmed.
            path = self.images.path_for(job['image'])
        else:
            path = bitstreams.locate(self.conf.agent.bitstream_dir,
                                     job['bitstream_id'])
        what = '%s of %s' % (job['deployable_name'],
                             describe.controlpath(job['controlpath_id']))
        started = time.monotonic()
        try:
            with self.regions.turn(job):
                # "with bitstream" once per programming (tests count it).
                LOG.info('Programming %s with bitstream %s started', what,
                         job['bitstream_id'])
                driver.program(job['controlpath_id'],
                               job['deployable_name'], path,
                               job['bitstream_id'])
        except Exception as error:
            LOG.warning('Programming %s (bitstream %s) failed after %.1f s: '
                        '%s', what, job['bitstream_id'],
                        time.monotonic() - started, error)
            raise
        LOG.info('Programming %s (bitstream %s) finished in %.1f s', what,
                 job['bitstream_id'], time.monotonic() - started)
        return job['bitstream_id']

    def flash_firmware(self, context, job):
        """Flash a device's firmware with a catalog image (fetched and
        verified first), then discover again: its regions and their
        interfaces may have changed. Returns the firmware before and
        after."""
        driver = self._driver(job['driver_name'])
        if not isinstance(driver, base.Flashable):
            raise exception.DriverError(
                driver=job['driver_name'], reason='it cannot flash firmware')
        cpid = job['controlpath_id']
        path = self.images.path_for(job['image'])
        old = driver.firmware_versions(cpid)
        started = time.monotonic()
        LOG.info('Flashing %s with image %s started (firmware now: %s)',
                 describe.controlpath(cpid), job['image']['uuid'],
                 describe.mapping(old))
        try:
            driver.flash_firmware(cpid, path)
        finally:
            self._rediscover()
        new = driver.firmware_versions(cpid)
        LOG.info('Flashing %s finished in %.1f s: firmware now %s',
                 describe.controlpath(cpid), time.monotonic() - started,
                 describe.mapping(new))
        return {'old': old, 'new': new}

    def apply_mig_layout(self, context, job):
        """Cut a GPU into the MIG devices of ``job['layout']``, then
        discover again: its deployables are those MIG devices. Returns the
        layout before and after."""
        driver = self._driver(job['driver_name'])
        if not isinstance(driver, base.MigPartitioning):
            raise exception.DriverError(
                driver=job['driver_name'], reason='it has no MIG layouts')
        cpid, layout = job['controlpath_id'], job['layout']
        old = driver.mig_layout(cpid)
        started = time.monotonic()
        LOG.info('Applying MIG layout [%s] to %s (now [%s])',
                 ', '.join(layout), describe.controlpath(cpid),
                 ', '.join(old))
        try:
            new = driver.apply_mig_layout(cpid, layout)
        finally:
            self._rediscover()
        LOG.info('MIG layout of %s applied in %.1f s: [%s]',
                 describe.controlpath(cpid), time.monotonic() - started,
                 ', '.join(new))
        return {'old': old, 'new': new}

    def _rediscover(self):
        # Even a failed flash may have changed what the card shows; a
        # report that fails now is retried by the discovery loop.
        try:
            self.tracker.update_inventory(force=True)
        except Exception:
            LOG.exception('Reporting the inventory after a change of the '
                          'hardware failed')

    def release_attach_handle(self, context, released):
        self.tracker.release(released)

    def start_playbook(self, context, job):
        """Start a driver operation's playbook; answers once it runs in
        the background (its progress and end come as conductor calls)."""
        self.playbooks.start(job)

    def cancel_playbook(self, context, operation_uuid):
        """Stop the operation's playbook; when it does not run here,
        tell the conductor so (it was cancelled before it started)."""
        if not self.playbooks.cancel(operation_uuid):
            self.playbooks.conductor_api.finish_driver_operation(
                context, operation_uuid, {'status': 'not_started'})

    def _driver(self, name):
        try:
            return self.tracker.drivers[name]
        except KeyError:
            raise exception.DriverError(
                driver=name, reason='not enabled on this host')
