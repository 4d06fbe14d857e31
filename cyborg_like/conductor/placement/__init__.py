"""Keeping OpenStack Placement in step with the inventory.

Nova schedules accelerators through Placement: a flavor's device profile
becomes request groups (``resources1=FPGA:1&required1=CUSTOM_...``) that
Placement answers with resource providers. The conductor publishes, for
every host, one child resource provider per deployable under the host's
compute node provider (which Nova creates, named after the hypervisor
hostname):

- uuid: the deployable's ``rp_uuid``; name ``<hostname>_<device uuid>_<name>``
  (the device uuid alone if that would pass Placement's 200 characters);
- inventory: its ``rc`` attribute as resource class, ``total`` =
  ``num_accelerators``; ``reserved`` = ``total`` while the device is disabled
  (status ``maintaining``), drained as unhealthy (db/health.py) or
  drained by an operation (db/drained.py), so the scheduler stops picking
  it;
  none when the deployable has no ``rc`` or no accelerators;
- traits: the values of its ``trait*`` attributes, ``CUSTOM_VENDOR_<vendor>``,
  ``CUSTOM_MODEL_<model>``, ``CUSTOM_REGION_<deployable name>`` for FPGA
  regions, ``CUSTOM_BITSTREAM_<bitstream id>`` once programmed (names upper
  cased, other characters than A-Z, 0-9 and _ turned into _), and
  ``CUSTOM_CYBORG_LIKE_MANAGED``, which marks providers as ours. The trait
  set is replaced as a whole: traits added by hand to our providers go.

Custom resource classes and traits are created as needed; names Placement
does not know and cannot take are dropped with a warning. Providers of ours
(marked by the trait or named ``<hostname>_<uuid>_...``) whose deployable is
gone are deleted; Placement refuses while allocations hold them, and the
next sync tries again.

Only hosts marked dirty in the database are synced (see
db/placement_sync.py). A conductor's first run marks the hosts no conductor
has synced within the last sync interval, so a cloud's start checks every
host once, however many conductors start. A conductor claims a host in the
database before syncing it, so each dirty host is synced by one conductor.
Every inventory or trait write carries the provider generation read just
before; a 409 generation conflict means someone else wrote meanwhile, so
the sync re-reads and re-applies, a bounded number of times. A host stays
marked until one sync of it succeeds, so an unreachable Placement, a
missing compute node or a refused delete are retried at the next run.
Syncs are idempotent and generation-checked as well, so a claim that
lapses (a conductor killed mid-sync) costs a repeated sync, not a wrong one.

Each sync of a host also reads the aggregates of its compute node provider
(one GET, microversion 1.19 or later) and keeps them on the host's row
(``hosts.aggregates``; none when Placement has no compute node of that
name): the availability feed groups by them and rollouts select by them.
They are read only when the host is synced: an aggregate changed in
Placement (or through Nova's host aggregates) shows at the host's next
sync, i.e. its next change or the next conductor start.

Modules: ``desired`` (what Placement should show, pure functions),
``client`` (one method per Placement request), ``names`` (traits and
resource classes Placement knows), ``host_sync`` (bringing one host in
line) and ``runner`` (the conductor's periodic task).
"""
