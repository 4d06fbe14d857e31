"""Database failures leave the db layer as our exceptions: the API answers
503 for an unreachable database, never a 500 with the driver's words."""

import pytest

from cyborg_like.common import exception
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import device_profiles


UNREACHABLE = {
    'mysql': 'mysql+pymysql://nobody:secret@127.0.0.1:1/none',
    # libpq 14+ words a refusal in a way oslo.db does not recognise.
    'postgresql': 'postgresql+psycopg://nobody:secret@127.0.0.1:1/none',
}


@pytest.fixture(params=sorted(UNREACHABLE))
def unreachable_db(request):
    # Nothing listens on port 1; no retries, so the test is quick.
    CONF.set_override('connection', UNREACHABLE[request.param],
                      group='database')
    CONF.set_override('max_retries', 0, group='database')
    db_api.dispose()
    try:
        yield
    finally:
        db_api.dispose()
        CONF.clear_override('connection', group='database')
        CONF.clear_override('max_retries', group='database')


def test_an_unreachable_database_is_service_unavailable(unreachable_db):
    with pytest.raises(exception.ServiceUnavailable) as raised:
        device_profiles.list_profiles([], 10)
    assert 'secret' not in str(raised.value)
    assert '127.0.0.1' not in str(raised.value)


def test_writes_too(unreachable_db):
    with pytest.raises(exception.ServiceUnavailable):
        device_profiles.create('p', [{'resources:FPGA': '1'}], None)
