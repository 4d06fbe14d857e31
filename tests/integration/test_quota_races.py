"""Projects' own limits, set through the API, against racing creations:
two conductor processes over RabbitMQ, on MariaDB and on PostgreSQL.

Creations of accelerator requests by one project's members are released
together from a thread pool, so both conductors count usage against the
same rows at once. A limit set with ``PUT /v2/quotas/{project}`` is read by
the creation's own transaction (db/quotas.reserve), after it has locked
the project's usage row: exactly the limit is granted, and a limit lowered
while creations run is never passed by a creation that committed after it.
The database is read directly to check what the API answered.
"""

import concurrent.futures
import threading
import uuid

import pytest
import requests
import sqlalchemy as sa

from .infra import BACKENDS
from .infra import JSON_HEADERS
from .infra import all_devices
from .infra import running_deployment

pytestmark = pytest.mark.integration

CONDUCTORS = 2
PROFILE = 'quota-race-fpga'
# The harness's 2 s RPC timeout is too short for a burst of creations on a
# busy machine; this is about correctness, not speed.
EXTRA_CONFIG = '[api]\nconductor_timeout = 30\n'


@pytest.fixture(scope='module', params=BACKENDS)
def two_conductors(request, tmp_path_factory):
    """API, agent and two conductors on a fresh vhost and database of the
    backend, with a profile of one FPGA."""
    workdir = str(tmp_path_factory.mktemp('quota-races-%s' % request.param))
    with running_deployment(request.param, workdir, conductors=CONDUCTORS,
                            extra_config=EXTRA_CONFIG,
                            wait_for_devices=all_devices) as dep:
        dep.call('POST', '/v2/device_profiles', {
            'name': PROFILE, 'groups': [{'resources:FPGA': '1'}]},
            expected=201)
        yield dep


def _member(project):
    return dict(JSON_HEADERS, **{'X-Roles': 'member,reader',
                                 'X-Project-Id': project})


def _create(dep, project):
    resp = requests.post(dep.api_url + '/v2/accelerator_requests',
                         json={'device_profile_name': PROFILE},
                         headers=_member(project), timeout=60)
    return resp.status_code, resp.text


def _set_limit(dep, project, limit):
    """PUT as the (noauth) admin; the quota it answers."""
    return dep.call('PUT', '/v2/quotas/%s' % project,
                    {'limits': {'FPGA': limit}}).json()['quota']


def _all_at_once(jobs):
    """Run every job (a callable) in its own thread, released together;
    their answers in order."""
    barrier = threading.Barrier(len(jobs))

    def run(job):
        barrier.wait(timeout=30)
        return job()

    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(run, jobs))


def _in_db(dep, project):
    """(ARQs of the project, its FPGA usage row), read directly."""
    with dep.engine.connect() as conn:
        arqs = conn.execute(sa.text(
            'SELECT COUNT(*) FROM extended_accelerator_requests '
            'WHERE project_id = :p'), {'p': project}).scalar()
        in_use = conn.execute(sa.text(
            "SELECT in_use FROM quota_usages WHERE project_id = :p "
            "AND resource = 'FPGA'"), {'p': project}).scalar()
    return arqs, in_use


def _statuses(answers):
    return sorted(status for status, _ in answers)


def _assert_refusals_name_the_limit(answers, limit):
    for status, text in answers:
        if status != 201:
            assert status == 403, answers
            assert 'Quota exceeded for FPGA: limit %d' % limit in text, text


def test_racing_creations_get_exactly_the_limit_set(two_conductors):
    dep = two_conductors
    project = 'quota-race-%s' % uuid.uuid4().hex[:8]
    quota = _set_limit(dep, project, 3)
    assert (quota['limits'], quota['sources']) == (
        {'FPGA': 3}, {'FPGA': 'project'})
    answers = _all_at_once([lambda: _create(dep, project)] * 16)
    assert _statuses(answers) == [201] * 3 + [403] * 13, answers
    _assert_refusals_name_the_limit(answers, 3)
    assert _in_db(dep, project) == (3, 3)

    # Raised: exactly the difference more is granted.
    _set_limit(dep, project, 5)
    answers = _all_at_once([lambda: _create(dep, project)] * 10)
    assert _statuses(answers) == [201] * 2 + [403] * 8, answers
    assert _in_db(dep, project) == (5, 5)


def test_a_limit_lowered_while_creations_run_is_never_passed(two_conductors):
    """The PUT lowering the limit races the creations. Its answer carries
    the usage as the new limit took effect (``before``, read under the
    locks that order it with the creations): those that committed later
    honoured the new limit, so usage ends at most max(before, limit). A
    creation read the old limit only if it committed first."""
    dep = two_conductors
    project = 'quota-lower-%s' % uuid.uuid4().hex[:8]
    _set_limit(dep, project, 1000)
    lowered = 4
    jobs = [lambda: _create(dep, project)] * 24
    jobs.insert(12, lambda: _set_limit(dep, project, lowered))
    answers = _all_at_once(jobs)
    quota = answers.pop(12)
    before = quota['usage']['FPGA']
    assert quota['limits'] == {'FPGA': lowered}
    granted = [a for a in answers if a[0] == 201]
    assert {status for status, _ in answers} <= {201, 403}, answers
    arqs, in_use = _in_db(dep, project)
    print('%s: usage %d as the limit of %d took effect, %d after the '
          'race' % (dep.backend, before, lowered, in_use))
    assert arqs == in_use == len(granted), (arqs, in_use, answers)
    assert in_use <= max(before, lowered), (before, in_use, answers)
    _assert_refusals_name_the_limit(answers, lowered)

    # Afterwards nothing more is granted above the lowered limit.
    answers = _all_at_once([lambda: _create(dep, project)] * 8)
    room = max(0, lowered - in_use)
    assert _statuses(answers) == [201] * room + [403] * (8 - room), answers
    assert _in_db(dep, project)[1] == max(in_use, lowered)

    # Back to the defaults (none here: unlimited).
    dep.call('DELETE', '/v2/quotas/%s' % project, expected=204)
    assert _create(dep, project)[0] == 201
