"""The gabbi fixtures of gabbi_fixtures.py with the API's read model off
([api] read_model = False): every read is a call to the conductor, as
before the read model. test_api_rpc_reads.py runs every gabbit with them,
so both ways of reading answer the same tests."""

import inspect

from gabbi import fixture

from cyborg_like.conf import CONF
from tests.functional import gabbi_fixtures


class _RpcReads:
    def start_fixture(self):
        CONF.set_override('read_model', False, group='api')
        super().start_fixture()

    def stop_fixture(self):
        try:
            super().stop_fixture()
        finally:
            CONF.clear_override('read_model', group='api')


for _name, _fixture in inspect.getmembers(gabbi_fixtures, inspect.isclass):
    if issubclass(_fixture, fixture.GabbiFixture) and \
            _fixture is not fixture.GabbiFixture:
        globals()[_name] = type(_name, (_RpcReads, _fixture), {})

current_app = gabbi_fixtures.current_app
