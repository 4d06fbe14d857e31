"""Runs the declarative API tests in gabbits/ against the in-process cloud."""

import os

from gabbi import driver
from gabbi.driver import test_pytest  # noqa: F401  (pytest collects it)

from tests.functional import gabbi_fixtures

GABBITS = os.path.join(os.path.dirname(__file__), 'gabbits')


def pytest_generate_tests(metafunc):
    driver.py_test_generator(
        GABBITS, intercept=gabbi_fixtures.current_app,
        fixture_module=gabbi_fixtures, test_loader_name=__name__,
        metafunc=metafunc)
