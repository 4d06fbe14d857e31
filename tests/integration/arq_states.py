"""Waiting for ARQs of a running deployment to settle, for the race tests
(test_concurrency.py, test_schedule_races.py)."""

import time

import pytest

RESOLVED = ('Bound', 'BindFailed')


def arqs_by_uuid(dep, uuids):
    """{uuid: ARQ as listed} for these ARQs; asserts none is missing."""
    wanted = set(uuids)
    listed = dep.call('GET', '/v2/accelerator_requests?limit=1000').json()
    found = {a['uuid']: a for a in listed['arqs'] if a['uuid'] in wanted}
    assert len(found) == len(wanted), 'ARQs missing from the list'
    return found


def wait_resolved(dep, uuids, timeout, poll):
    """Every ARQ Bound or BindFailed; fails listing the others."""
    deadline = time.monotonic() + timeout
    while True:
        arqs = arqs_by_uuid(dep, uuids)
        pending = {u: a['state'] for u, a in arqs.items()
                   if a['state'] not in RESOLVED}
        if not pending:
            return arqs
        if time.monotonic() > deadline:
            pytest.fail('%d ARQ(s) not resolved after %ds: %s'
                        % (len(pending), timeout, pending), pytrace=False)
        time.sleep(poll)
