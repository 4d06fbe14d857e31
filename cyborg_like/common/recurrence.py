"""The windows of a lease: one, or one per occurrence of an RFC 5545
recurrence rule, in a stated IANA time zone (python-dateutil's rrule,
zoneinfo).

A window is given by its first occurrence in local time (``start`` to
``end``); every occurrence starts at the rule's local time and lasts the
same wall-clock time, so "20:00-06:00 on weeknights" stays 20:00-06:00 in
Berlin across a change to or from daylight saving time (a window then
lasts an hour more or less in UTC). Windows are returned in naive UTC, as
the database stores times.
"""

import datetime
import zoneinfo

from dateutil import rrule

from cyborg_like.common import exception

UTC = datetime.timezone.utc
# The longest one window may be: longer is a mistake, not a lease.
LONGEST = datetime.timedelta(days=366)


def zone(name):
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise exception.Invalid('Unknown time zone %r (an IANA name such '
                                'as Europe/Berlin is expected).' % name)


def _rule(start, rule):
    if rule is None:
        return None
    text = rule.strip()
    if text.upper().startswith('RRULE:'):
        text = text[6:]
    if 'DTSTART' in text.upper() or '\n' in text:
        raise exception.Invalid('The recurrence is one RRULE without '
                                'DTSTART (the window start gives it).')
    try:
        return rrule.rrulestr(text, dtstart=start)
    except (ValueError, TypeError, KeyError, IndexError,
            OverflowError) as error:
        raise exception.Invalid('Invalid recurrence rule %r: %s'
                                % (rule, error))


def check(start_local, end_local, timezone, rule):
    """Refuse what cannot be a lease's window (400)."""
    tz = zone(timezone)
    if end_local <= start_local:
        raise exception.Invalid('A window must end after it starts.')
    if end_local - start_local > LONGEST:
        raise exception.Invalid('A window may last at most 366 days.')
    _rule(start_local.replace(tzinfo=tz), rule)


def to_utc(local, timezone):
    """Naive local time in ``timezone`` -> naive UTC."""
    aware = local.replace(tzinfo=zone(timezone))
    return aware.astimezone(UTC).replace(tzinfo=None)


def windows(start_local, end_local, timezone, rule, after, until,
            limit=None):
    """[(starts_at, ends_at)] in naive UTC of the windows ending after
    ``after`` and starting before ``until`` (naive UTC), in order;
    Invalid when there are more than ``limit`` or two overlap."""
    try:
        return _windows(start_local, end_local, timezone, rule, after,
                        until, limit)
    except (OverflowError, ValueError) as error:
        # A date the calendar cannot carry (year 1 in a zone east of
        # UTC, year 9999 plus a window).
        raise exception.Invalid('The windows cannot be computed: %s'
                                % error)


def _windows(start_local, end_local, timezone, rule, after, until, limit):
    tz = zone(timezone)
    start = start_local.replace(tzinfo=tz)
    length = end_local - start_local         # wall-clock
    found = []
    recurrence = _rule(start, rule)
    if recurrence is None:
        occurrences = iter([start])
    else:
        # The earliest start whose window may still end after ``after``.
        first = (after.replace(tzinfo=UTC) - length
                 - datetime.timedelta(hours=3)).astimezone(tz)
        occurrences = recurrence.xafter(max(first, start), inc=True)
    hi = until.replace(tzinfo=UTC)
    for begin in occurrences:
        if begin.astimezone(UTC) >= hi:
            break
        window = (_utc(begin), _utc(begin + length))
        if window[1] <= after:
            continue
        if found and window[0] < found[-1][1]:
            raise exception.Invalid(
                'The windows of the recurrence overlap: each lasts longer '
                'than the time between two of them.')
        found.append(window)
        if limit is not None and len(found) > limit:
            raise exception.Invalid(
                'The recurrence has more than %d windows within the lease '
                'horizon ([leases] max_windows).' % limit)
    return found


def _utc(aware):
    # Wall-clock arithmetic keeps the zone; a local time that does not
    # exist (skipped at a change to DST) maps as zoneinfo maps it.
    return aware.astimezone(UTC).replace(tzinfo=None)


def last_start(start_local, timezone, rule):
    """The start (naive UTC) of the last window, or None when the
    recurrence never ends."""
    tz = zone(timezone)
    start = start_local.replace(tzinfo=tz)
    recurrence = _rule(start, rule)
    if recurrence is None:
        return _utc(start)
    if recurrence._until is None and recurrence._count is None:
        return None
    last = None
    for last in recurrence:
        pass
    return _utc(last) if last is not None else None
