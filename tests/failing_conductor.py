"""A real RPC endpoint that fails the way a conductor bug or an unmapped
library error does, and the check that nothing of it reaches a client.

Used on the fake transport (tests/functional/test_bad_input.py), where the
exception reaches the API as it is, and over RabbitMQ
(tests/integration/test_conductor_errors.py), where it is a RemoteError.
"""

import json

from oslo_db import exception as db_exc
import oslo_messaging as messaging

from cyborg_like.conductor import rpcapi

SECRET = ('Traceback (most recent call last): File "/srv/cyborg_like/db/'
          'arqs.py" [SQL: UPDATE extended_accelerator_requests SET x=?]')
LEAKS = ('Traceback', '/srv/', 'SQL', 'UPDATE', 'DBError', 'RuntimeError',
         'Remote error')


class FailingConductor:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def list_devices(self, context, **kwargs):
        # Not in the transport's allowed modules: a RemoteError.
        raise db_exc.DBError(SECRET)

    def list_deployables(self, context, **kwargs):
        # A built-in: rebuilt as RuntimeError_Remote.
        raise RuntimeError(SECRET)


def assert_clean_500(response, code, log_records):
    """A 500 with ``code``, no internals in it, the details logged under
    the request's id."""
    assert response.status_int == 500, response.text
    fault = json.loads(response.json['error_message'])
    assert fault['error_code'] == code
    for leak in LEAKS:
        assert leak not in response.text
    request_id = response.headers['X-OpenStack-Request-ID']
    logged = [r for r in log_records if request_id in r.getMessage()]
    assert logged
    assert 'SQL: UPDATE' in logged[0].getMessage() + str(logged[0].exc_info)
