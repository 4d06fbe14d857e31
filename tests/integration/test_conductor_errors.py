"""No internals reach a client, over a real broker and real databases.

On the fake transport an endpoint's exception reaches the caller as it is;
over RabbitMQ an unexpected one arrives as a RemoteError carrying the
conductor's traceback, paths and SQL. The API answers a clean 500 with a
stable code and logs the details under the request id. A value the
database refuses (MariaDB, strict mode) is a 400, never a leak.
"""


import oslo_messaging as messaging
import pytest
import webob

from cyborg_like.api import app as app_module
from cyborg_like.common import exception
from cyborg_like.common import rpc
from cyborg_like.conductor import rpcapi
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import device_profiles
from cyborg_like.db import migration
from tests import failing_conductor
from tests.functional import cloud as cloud_module

from .infra import fresh_database
from .infra import rabbitmq_vhost

pytestmark = pytest.mark.integration

def ConductorAPIOn(topic):
    """The API's conductor client, on another topic."""
    return rpcapi.ConductorAPI(timeout=20, topic=topic)


# Per test: a module-wide cloud would still run its periodic tasks (on the
# process-wide database option) while the MariaDB test below points that
# option elsewhere and clears it.
@pytest.fixture
def app_over_rabbit():
    with rabbitmq_vhost() as url:
        cloud = cloud_module.Cloud(
            overrides={(None, 'transport_url'): url}).start()
        server = rpc.get_server(
            messaging.Target(topic='failing', server='failing'),
            [failing_conductor.FailingConductor()])
        server.start()
        try:
            yield app_module.setup_app(CONF, ConductorAPIOn('failing'))
        finally:
            server.stop()
            server.wait()
            cloud.stop()


@pytest.mark.parametrize('path, code', [
    ('/v2/devices', 'accel.conductor.error'),
    ('/v2/deployables', 'accel.error')])
def test_a_remote_error_is_a_clean_500(app_over_rabbit, caplog, path,
                                       code):
    failing_conductor.assert_clean_500(
        webob.Request.blank(path).get_response(app_over_rabbit), code,
        caplog.records)


@pytest.fixture
def mariadb():
    with fresh_database('mariadb') as url:
        CONF.set_override('connection', url, group='database')
        db_api.dispose()
        try:
            migration.upgrade()
            yield url
        finally:
            db_api.dispose()
            CONF.clear_override('connection', group='database')


def test_a_value_the_database_refuses_is_invalid(mariadb):
    with pytest.raises(exception.Invalid) as raised:
        device_profiles.create('x' * 300, [{'resources:FPGA': '1'}], None)
    assert 'xxxx' not in str(raised.value)
    assert 'INSERT' not in str(raised.value)
