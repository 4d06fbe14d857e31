"""A recording stand-in of Nova's API, as far as cyborg_like calls it:
os-server-external-events (each call checked against Nova's request
schema) and the server actions a lease's preemption asks (shelve,
shelveOffload) with GET /servers/{id}: each action from the statuses Nova
allows it in, 409 otherwise.
"""

import http.server
import json
import threading

import jsonschema

from tests import json_http


# Nova's request body for POST /os-server-external-events (microversion
# 2.82 added accelerator-request-bound).
NOVA_EVENTS_SCHEMA = {
    'type': 'object',
    'properties': {'events': {
        'type': 'array', 'minItems': 1,
        'items': {
            'type': 'object',
            'properties': {
                'server_uuid': {'type': 'string', 'pattern':
                                '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$'},
                'name': {'enum': ['network-changed', 'network-vif-plugged',
                                  'network-vif-unplugged',
                                  'network-vif-deleted',
                                  'volume-extended', 'power-update',
                                  'accelerator-request-bound',
                                  'volume-reimaged']},
                'status': {'enum': ['failed', 'completed', 'in-progress']},
                'tag': {'type': 'string', 'maxLength': 255},
            },
            'required': ['server_uuid', 'name'],
            'additionalProperties': False}}},
    'required': ['events'],
    'additionalProperties': False,
}


# Nova's server actions: (the statuses it accepts them in, the status
# after). Shelving ends SHELVED, or SHELVED_OFFLOADED at once where Nova
# offloads shelved instances itself (shelved_offload_time = 0).
SERVER_ACTIONS = {
    'shelve': ({'ACTIVE', 'SHUTOFF', 'PAUSED', 'SUSPENDED'}, 'SHELVED'),
    'shelveOffload': ({'SHELVED'}, 'SHELVED_OFFLOADED'),
}


class FakeNova(http.server.ThreadingHTTPServer):
    """``calls``: the external events' requests; ``actions``: (server,
    action) of each server action accepted; ``servers``: each server's
    status (ACTIVE until an action moves it)."""

    def __init__(self, transient_failures=0, offload_at_once=False,
                 prefix=''):
        """``prefix``: the path of the endpoint's root (``/compute/v2.1``
        where a catalog names it so)."""
        super().__init__(('127.0.0.1', 0), _Handler)
        self.prefix = prefix
        self.calls = []
        self.actions = []
        self.servers = {}
        self.offload_at_once = offload_at_once
        self.transient_failures = transient_failures
        self.thread = threading.Thread(target=self.serve_forever,
                                       daemon=True)

    def version(self):
        """Nova's answer at the root of its v2.1 endpoint."""
        url = 'http://127.0.0.1:%d%s/' % (self.server_address[1],
                                          self.prefix)
        return {'id': 'v2.1', 'status': 'CURRENT', 'version': '2.100',
                'min_version': '2.1', 'updated': '2013-07-23T11:33:21Z',
                'links': [{'rel': 'self', 'href': url}],
                'media-types': [{
                    'base': 'application/json',
                    'type': 'application/vnd.openstack.compute+json;'
                            'version=2.1'}]}

    def act(self, server, action):
        """(status, answer) of ``action`` on ``server``, as Nova's."""
        allowed, after = SERVER_ACTIONS[action]
        status = self.servers.get(server, 'ACTIVE')
        if status not in allowed:
            return 409, {'conflictingRequest': {
                'code': 409, 'message': "Cannot '%s' instance %s while it "
                                        'is in status %s' % (action, server,
                                                             status)}}
        if after == 'SHELVED' and self.offload_at_once:
            after = 'SHELVED_OFFLOADED'
        self.servers[server] = after
        self.actions.append((server, action))
        return 202, None


class _Handler(json_http.QuietHandler):
    def _parts(self):
        """The path's words under the endpoint's root; None above it."""
        prefix = self.server.prefix
        if self.path.rstrip('/') != prefix and not self.path.startswith(
                prefix + '/'):
            return None
        return self.path[len(prefix):].strip('/').split('/')

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        parts = self._parts()
        if parts[0] == 'servers' and parts[2:] == ['action']:
            [action] = body
            assert body[action] is None, body
            return self._answer(*self.server.act(parts[1], action))
        self.server.calls.append((self.path, dict(self.headers), body))
        if self.server.transient_failures:
            self.server.transient_failures -= 1
            return self._answer(503, {'error': 'try later'})
        jsonschema.validate(body, NOVA_EVENTS_SCHEMA)
        # As Nova: 404 inside for an instance it does not find (deleted,
        # or outside the caller's view), 422 for one not on a host yet
        # (being scheduled), 207 when not every event was 200.
        codes = {'DELETED': 404, 'SCHEDULING': 422}
        events = [dict(e, code=codes.get(self.server.servers.get(
            e['server_uuid']), 200)) for e in body['events']]
        self._answer(200 if all(e['code'] == 200 for e in events) else 207,
                     {'events': events})

    def do_GET(self):
        parts = self._parts()
        # Version discovery (keystoneauth reads it where a major version is
        # asked for): the versions above the endpoint, v2.1 at its root.
        if parts is None:
            return self._answer(200, {'versions': [self.server.version()]})
        if parts == ['']:
            return self._answer(200, {'version': self.server.version()})
        assert parts[0] == 'servers' and len(parts) == 2, self.path
        if self.server.servers.get(parts[1]) == 'DELETED':
            return self._answer(404, {'itemNotFound': {
                'code': 404, 'message': 'Instance %s could not be found.'
                % parts[1]}})
        self._answer(200, {'server': {
            'id': parts[1],
            'status': self.server.servers.get(parts[1], 'ACTIVE')}})
