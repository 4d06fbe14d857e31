"""The API and agent processes never load the database layer."""

import subprocess
import sys

import pytest

FORBIDDEN = ('sqlalchemy', 'oslo_db', 'alembic')


@pytest.mark.parametrize('entry', ['cyborg_like.cmd.api',
                                   'cyborg_like.cmd.agent',
                                   'cyborg_like.api.app',
                                   'cyborg_like.agent.service'])
def test_process_does_not_import_the_database(entry):
    code = ('import sys, %s\n'
            'bad = sorted(m for m in sys.modules if m.split(".")[0] in %r '
            'or m.startswith("cyborg_like.db"))\n'
            'print(",".join(bad))' % (entry, FORBIDDEN))
    out = subprocess.run([sys.executable, '-c', code], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == '', 'loaded: %s' % out


# The API as cyborg-like-api builds it, serving requests that go through
# every layer: routing, schema validation, policy, the RPC client (no
# conductor answers the fake transport: 503 after the timeout).
SERVE = """
import sys
import webob
from cyborg_like.cmd import common
conf = common.prepare([])
conf.set_override('transport_url', 'inproc:/')
conf.set_override('auth_strategy', 'noauth', group='api')
conf.set_override('conductor_timeout', 1, group='api')
from cyborg_like.common import rpc
rpc.init(conf)
from cyborg_like.api import app
application = app.setup_app(conf)
statuses = []
for method, path, body in [
        ('GET', '/', None), ('GET', '/v2', None),
        ('GET', '/v2/devices', None),
        ('GET', '/v2/devices?limit=nope', None),
        ('POST', '/v2/device_profiles', b'{"name": 1}'),
        ('GET', '/v2/nowhere', None)]:
    request = webob.Request.blank(path, method=method)
    if body:
        request.body = body
        request.content_type = 'application/json'
    statuses.append(request.get_response(application).status_int)
print(statuses)
print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in %r
                      or m.startswith('cyborg_like.db'))))
import sqlalchemy
print(sqlalchemy.__name__)
"""


def test_api_serves_requests_without_the_database_layer():
    lines = subprocess.run(  # the last lines; the log comes first
        [sys.executable, '-c', SERVE % (FORBIDDEN,)], check=True,
        capture_output=True, text=True, timeout=120).stdout.splitlines()[-3:]
    assert lines == ['[200, 200, 503, 400, 400, 404]', '',
                     # Not kept out for good: a library may still use it.
                     'sqlalchemy']
