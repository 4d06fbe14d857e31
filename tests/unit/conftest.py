import oslo_messaging as messaging
import pytest

from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi as conductor_rpcapi
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api


@pytest.fixture
def sqlite_db(tmp_path):
    """A fresh, empty SQLite database behind the conductor's db layer."""
    url = 'sqlite:///%s' % (tmp_path / 'unit.sqlite')
    CONF.set_override('connection', url, group='database')
    db_api.dispose()
    try:
        yield url
    finally:
        db_api.dispose()
        CONF.clear_override('connection', group='database')


@pytest.fixture
def migrated_db(sqlite_db):
    from cyborg_like.db import migration
    migration.upgrade()
    return sqlite_db


@pytest.fixture
def transport():
    """In-process messaging (common/inproc_transport.py)."""
    CONF.set_override('transport_url', 'inproc:/')
    rpc.init(CONF)
    try:
        yield
    finally:
        rpc.cleanup()
        CONF.clear_override('transport_url')


@pytest.fixture
def serve(transport):
    """``serve(endpoint, topic=<the conductor's>, server='c1', **kwargs)``
    starts an RPC server of ``endpoint`` (``kwargs``: rpc.get_server's,
    e.g. ``drop_late``); every server started stops when the test ends.
    ``ordered=True``: one worker handles the messages one after the other,
    in the order taken, so the answer to a marker call proves every
    message queued before it handled (no waiting on time)."""
    servers = []

    def start(endpoint, topic=conductor_rpcapi.TOPIC, server='c1',
              ordered=False, **kwargs):
        started = rpc.get_server(messaging.Target(topic=topic, server=server),
                                 [endpoint], **kwargs)
        started.start(override_pool_size=1 if ordered else None)
        servers.append(started)
        return started

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
            server.wait()


@pytest.fixture
def conductor_cap():
    """``conductor_cap(version)`` sets [upgrade_levels] conductor for the
    test; cleared when it ends."""
    def cap(version):
        CONF.set_override('conductor', version, group='upgrade_levels')

    try:
        yield cap
    finally:
        CONF.clear_override('conductor', group='upgrade_levels')
