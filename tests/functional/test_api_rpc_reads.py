"""Every gabbit of gabbits/ again, with the API's read model off: the
answers the read model gives (test_api.py) are the conductor's."""

from gabbi import driver
from gabbi.driver import test_pytest  # noqa: F401  (pytest collects it)

from tests.functional import gabbi_fixtures_rpc_reads
from tests.functional import test_api


def pytest_generate_tests(metafunc):
    driver.py_test_generator(
        test_api.GABBITS, intercept=gabbi_fixtures_rpc_reads.current_app,
        fixture_module=gabbi_fixtures_rpc_reads, test_loader_name=__name__,
        metafunc=metafunc)
