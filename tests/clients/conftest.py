"""Fixtures of the client tests: python-cyborgclient (through the
openstack CLI), openstacksdk and Nova's calls against a real
``cyborg-like-all-in-one`` process (see service.py)."""

import pytest

from tests.clients.service import LOG_TAIL
from tests.clients.service import Service


@pytest.fixture(scope='module')
def cyborg(tmp_path_factory):
    """A cyborg-like-all-in-one serving INVENTORY, for one test module."""
    service = Service(str(tmp_path_factory.mktemp('all-in-one')))
    try:
        yield service.start()
    finally:
        returncode = service.stop()
    assert returncode == 0, (
        'cyborg-like-all-in-one exited with %s after SIGTERM:\n%s'
        % (returncode, service.log_tail()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        service = getattr(item, 'funcargs', {}).get('cyborg')
        if isinstance(service, Service):
            report.sections.append((
                'cyborg-like-all-in-one log (last %d lines)' % LOG_TAIL,
                service.log_tail()))
    return report
