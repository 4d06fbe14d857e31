"""Placement allocations of standalone bindings (docs/scheduling.md).

Nova claims in Placement the accelerators it schedules; a binding the
conductor scheduled itself (db/scheduling.py) claims its own, so that
Nova and standalone users never count on the same device: one unit of
the deployable's resource class on its resource provider, for the
consumer the caller named.

The database says what a consumer should hold: ``sync`` reads the
consumer's allocations (and generation) first, then the standalone
bindings that claim for it, and writes the difference, keeping the
consumer's allocations on providers that are not our deployables (an
Ironic instance's node, say). A write from a stale read fails on the
generation and is done again from fresh reads, so any number of
conductors may sync the same consumer at once and the last write
reflects the database. Every step that ends a standalone binding (unbind,
delete, failure, the liveness sweep) syncs its consumer afterwards;
syncs are idempotent, so doing it twice costs a read.

Without ``[placement] auth_type`` nothing is claimed.
"""

from oslo_log import log as logging

from cyborg_like.conductor.placement import client as rest
from cyborg_like.db import scheduling

LOG = logging.getLogger(__name__)

# Who owns a new consumer when the request has no project or user (an
# admin's request made without a project).
UNKNOWN_OWNER = 'cyborg_like'
CONCURRENT_UPDATE = 'placement.concurrent_update'
RETRIES = 5


class Refused(Exception):
    """Placement will not give the provider to the consumer: it is full
    (Nova's allocations hold it) or the consumer is another project's."""


class Claims:
    def __init__(self, conf):
        self.conf = conf
        self._client = None

    @property
    def enabled(self):
        return bool(self.conf.placement.auth_type)

    @property
    def client(self):
        if self._client is None:
            self._client = rest.PlacementClient(self.conf)
        return self._client

    def sync(self, consumer, project_id=None, user_id=None):
        """Make Placement hold for ``consumer`` what its standalone
        bindings claim. Raises Refused, or rest.Unreachable /
        rest.UnexpectedAnswer when Placement cannot be asked."""
        for _ in range(RETRIES):
            current = self.client.allocations(consumer)
            wanted, ended, projects = scheduling.desired_allocations(
                consumer)
            held = {rp: dict(a['resources'])
                    for rp, a in current.get('allocations', {}).items()}
            managed = scheduling.ours(set(held) | set(wanted))
            new = {rp: counts for rp, counts in held.items()
                   if rp not in managed}
            new.update(wanted)
            owner = current.get('project_id')
            # The projects of our requests for it (none known once they
            # are deleted: then what is on our providers is ours to free).
            mine = {project_id} if project_id else {
                p or UNKNOWN_OWNER for p in projects}
            if owner and mine and owner not in mine:
                if wanted:
                    raise Refused('Consumer %s belongs to another project.'
                                  % consumer)
                # Nothing of ours can be there: a claim refused for this
                # reason was never made; what is there is the owner's.
                scheduling.forget(ended)
                return
            if new == held:
                scheduling.forget(ended)
                return
            response = self.client.set_allocations(consumer, {
                'allocations': {rp: {'resources': counts}
                                for rp, counts in new.items()},
                'project_id': owner or project_id or UNKNOWN_OWNER,
                'user_id': current.get('user_id') or user_id
                or UNKNOWN_OWNER,
                'consumer_generation': current.get('consumer_generation')})
            if response.status_code == 204:
                scheduling.forget(ended)
                return
            if response.status_code == 409 and \
                    rest.error_code(response) == CONCURRENT_UPDATE:
                continue        # someone else wrote: read again
            if response.status_code in (400, 409):
                raise Refused('Placement refused the allocation of %s: %s'
                              % (consumer, rest.describe(response)))
            raise rest.UnexpectedAnswer('PUT /allocations/%s: %s' % (
                consumer, rest.describe(response)))
        raise rest.UnexpectedAnswer(
            'The allocations of %s kept changing (%d tries).'
            % (consumer, RETRIES))

    def release(self, consumers):
        """After bindings ended: sync these consumers; failures are
        logged, and the liveness sweep's ``sync_stale`` tries again."""
        if not self.enabled:
            return
        for consumer in sorted(consumers):
            try:
                self.sync(consumer)
            except (Refused, rest.Unreachable, rest.UnexpectedAnswer) as e:
                LOG.warning('Could not remove the Placement allocations '
                            'of standalone bindings of consumer %s; they '
                            'are retried: %s', consumer, e)

    def sync_stale(self, uuids=None):
        """Sync the consumers of ended standalone bindings (of ``uuids``)
        whose claims are still recorded."""
        if self.enabled:
            self.release(scheduling.stale(uuids))
