"""The availability feed: free, used and reserved accelerators, grouped.

Each deployable with accelerators counts ``total`` (num_accelerators),
``used`` (attach handles in use), ``reserved`` (not offered: its device
disabled or drained, its host down, or handles being released) and
``free`` (the rest). Traits are those Placement is told
(conductor/placement/desired.py), so an orchestrator and Nova's scheduler
speak of the same ``CUSTOM_*`` names; ``function`` is the catalog's
function name of the bitstream loaded in an FPGA region.

Groups are sums over the dimensions asked for (common/availability.py).
A host in several Placement aggregates counts in the group of each with
``aggregate``, so the totals (each deployable once) are not the sum of
such groups.
With a cursor (``since``) only the groups of the hosts changed after it come
back, with the list of those hosts: a poller replaces what it holds of
each of them, so ``host`` is added to the dimensions if not asked for.
"""

import collections
import itertools
import threading

from cyborg_like.conductor import leases
from cyborg_like.conductor.placement import desired
from cyborg_like.db import availability

COUNTS = ('total', 'used', 'reserved', 'free')


class Feed:
    """The feed of one conductor process, keeping its last whole answers
    by cursor: the cursor names the state of the database (every change
    of what a host offers adds to it), so a poller that sends no ETag
    costs one query as long as nothing changed, not a read of every
    deployable (about 0.45 s of CPU with 10,000 devices)."""

    KEPT = 16   # whole answers kept, by grouping and cursor

    def __init__(self, site, host_down_after, horizon_days=None):
        self.site = site
        self.host_down_after = host_down_after
        # How far ahead ``at`` may ask ([leases] horizon_days).
        self.horizon_days = horizon_days
        self._whole = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, group_by, since, known_cursor, at=None):
        """The feed, or ``{'cursor': N, 'unchanged': True}`` when
        ``known_cursor`` (from a poller's ETag) is still the newest.
        ``at`` (ISO 8601): as it will be then, the devices leased in a
        window at that time counted reserved (leases are changes too, so
        the cursor still tells whether anything changed)."""
        when = leases.future_time(at, self.horizon_days) if at else None
        if since is not None and 'host' not in group_by:
            # A change is sent as the whole offer of each host that
            # changed.
            group_by = [*group_by, 'host']
        if since is None:
            cursor = availability.cursor()
            if cursor == known_cursor:
                return {'cursor': cursor, 'unchanged': True}
            with self._lock:
                kept = self._whole.get((tuple(group_by), cursor, at))
            if kept is not None:
                return kept
        result = self._build(group_by, since, when)
        if at:
            result['at'] = at
        if since is None:
            with self._lock:
                self._whole[(tuple(group_by), result['cursor'], at)] = \
                    result
                while len(self._whole) > self.KEPT:
                    self._whole.popitem(last=False)
        return result

    def _build(self, group_by, since, when=None):
        cursor, hosts, facts = availability.facts(since,
                                                  self.host_down_after, when)
        groups, totals = _groups(facts, group_by, self.site)
        result = {'site': self.site, 'cursor': cursor,
                  'group_by': list(group_by), 'groups': groups,
                  'totals': totals}
        if hosts is not None:
            result.update(since=since, hosts=hosts)
        return result


def _groups(facts, group_by, site):
    """(groups, totals). A deployable counts once in each group it is in:
    in one per dimension but ``aggregate``, where its host's every
    aggregate (or null, in none) is one; the totals count it once."""
    groups, totals = {}, dict.fromkeys(COUNTS, 0)
    for fact in facts:
        counts = _counts(fact)
        if counts is None:
            continue        # no resource class: not offered to anyone
        for name in COUNTS:
            totals[name] += counts[name]
        for key in _keys(fact, group_by):
            group = groups.get(key)
            if group is None:
                group = groups[key] = dict(
                    zip(group_by, [list(v) if isinstance(v, tuple) else v
                                   for v in key]),
                    site=site, **dict.fromkeys(COUNTS, 0))
            for name in COUNTS:
                group[name] += counts[name]
    return [groups[key] for key in sorted(groups, key=_sortable)], totals


def _counts(fact):
    resource_class = fact['attributes'].get(desired.RC_KEY)
    if not resource_class:
        return None
    total, used = fact['num_accelerators'], min(fact['used'],
                                                fact['num_accelerators'])
    if fact['usable']:
        reserved = min(fact['releasing'], total - used)
    else:
        reserved = total - used
    return {'total': total, 'used': used, 'reserved': reserved,
            'free': total - used - reserved}


def _keys(fact, group_by):
    """The keys of the groups ``fact`` counts in: one, or one per
    aggregate of its host."""
    return itertools.product(*(_values(fact, d) for d in group_by))


def _values(fact, dimension):
    if dimension == 'traits':
        return [tuple(sorted(desired.wanted_traits(fact)
                             - {desired.OWNER_TRAIT}))]
    if dimension == 'aggregate':
        return fact['aggregates'] or [None]
    if dimension == 'resource_class':
        return [fact['attributes'].get(desired.RC_KEY)]
    return [fact[_FACT.get(dimension, dimension)]]


# The fact's name of a dimension, where it is another.
_FACT = {'host': 'hostname'}


def _sortable(key):
    return tuple('' if v is None else str(v) for v in key)
