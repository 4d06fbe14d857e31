"""Fixtures of the integration tests; the machinery is in infra.py."""

import pytest

from tests import arq_world
from .infra import BACKENDS
from .infra import Deployment
from .infra import LOG_TAIL_LINES
from .infra import all_devices
from .infra import fresh_database
from .infra import running_deployment
# The real Keystone of the session (tests/integration/keystone.py).
from .keystone import keystone_cloud  # noqa: F401
# A real Glance on that Keystone (tests/integration/glance.py).
from .glance import glance_cloud  # noqa: F401


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    """Conductor, agent and API on a fresh vhost and database, per module
    and backend; the inventory of the fake driver is BASE_INVENTORY and
    already visible through the API when the test starts.
    """
    backend = request.param
    workdir = str(tmp_path_factory.mktemp('deployment-%s' % backend))
    # A deployment that cannot start prints its logs to stderr, shown by
    # pytest as "Captured stderr setup".
    with running_deployment(backend, workdir,
                            wait_for_devices=all_devices) as dep:
        yield dep


@pytest.fixture(autouse=True)
def _deployment_running(request):
    """Before each test: every service of a shared deployment is up (a
    failed test may have left one stopped); restart what is not.
    """
    if 'deployment' in request.fixturenames:
        dep = request.getfixturevalue('deployment')
        for name in dep.services:
            if not dep.services[name].running:
                dep.services[name].stop()
                dep.services[name].start()
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        # The shared ``deployment`` or any other fixture's Deployment.
        for dep in getattr(item, 'funcargs', {}).values():
            if not isinstance(dep, Deployment):
                continue
            for name, text in dep.logs().items():
                report.sections.append((
                    'cyborg-like-%s log (%s, last %d lines of %s)'
                    % (name, dep.backend, LOG_TAIL_LINES,
                       dep.services[name].log_path), text))
    return report


@pytest.fixture(params=BACKENDS)
def empty_database(request):
    """(backend, URL) of a fresh database with no tables; dropped after."""
    with fresh_database(request.param) as url:
        yield request.param, url


@pytest.fixture(scope='module', params=BACKENDS)
def world(request, tmp_path_factory):
    """A conductor's database layer in this process (tests/arq_world.py)
    on a fresh database of each backend, per module: for races that
    threads run straight against the database."""
    with fresh_database(request.param) as db_url:
        world = arq_world.World().start(
            db_url, str(tmp_path_factory.mktemp(request.param)))
        try:
            yield world
        finally:
            world.stop()
