"""Every kind of write the API takes, for the fault tests' cuts.

``Writes`` sends one request of a kind per call (each valid on its own:
names, lease windows and attribute keys never repeat), answers as
cuts.timed does, and remembers what it sent, so that after a cut a test
checks that nothing was written for a request answered 503: the change
log (db/changes.py) records every committed write with its request id,
whatever its kind, and the rows of each kind say the same.
"""

import datetime
import itertools
import threading
import uuid

import sqlalchemy as sa

from .cuts import timed

IMAGE = '0a1b2c3d-0000-4000-8000-0000000000f1'     # a bitstream id
# "key" is a reserved word of MariaDB: quoted as each database wants.
_KEY = sa.column('key')
_CUT_ATTRIBUTES = sa.select(_KEY).select_from(sa.table('attributes')).where(
    _KEY.like('cut-%'))


class Writes:
    """``dep``: the deployment; ``profile``: a device profile's name for
    new ARQs; ``victims``: ARQs to delete; ``unbound``: ARQs to bind to
    the GPU."""

    def __init__(self, dep, profile, victims=(), unbound=()):
        self.dep = dep
        self.profile = profile
        self._victims = list(victims)
        self._unbound = list(unbound)
        self._count = itertools.count(1)
        self._hours = itertools.count()
        self._tomorrow = datetime.datetime.now(datetime.timezone.utc).replace(
            minute=0, second=0, microsecond=0,
            tzinfo=None) + datetime.timedelta(days=1)
        self._lock = threading.Lock()
        self.deleted = []       # the ARQs whose DELETE was sent
        self.bound = []         # the ARQs whose bind was sent
        self._gpu = self._deployable('gpu0')
        self._region = self._deployable('region0')
        [self._gpu_device] = [d['uuid'] for d in self._get('/v2/devices')[
            'devices'] if d['type'] == 'GPU']
        # Deployables show no id; their attributes name it.
        self._gpu_id = next(
            a['deployable_id'] for a in self._get('/v2/attributes')[
                'attributes'] if a['key'] == 'rc' and a['value'] == 'PGPU')

    def kinds(self):
        return [self.create_arq, self.create_profile, self.delete_arq,
                self.bind_arq, self.create_lease, self.create_attribute,
                self.program, self.create_rollout]

    def _get(self, path):
        return self.dep.call('GET', path).json()

    def _deployable(self, name):
        [found] = self._get('/v2/deployables?name=%s' % name)['deployables']
        return found

    def _next(self):
        with self._lock:
            return next(self._count)

    def _send(self, method, path, body):
        return timed(method, self.dep.api_url + path, json=body)

    def create_arq(self):
        return self._send('POST', '/v2/accelerator_requests',
                          {'device_profile_name': self.profile})

    def create_profile(self):
        return self._send('POST', '/v2/device_profiles', {
            'name': 'cut-%d' % self._next(),
            'groups': [{'resources:PGPU': '1'}]})

    def delete_arq(self):
        with self._lock:
            if not self._victims:
                return self.create_arq()
            victim = self._victims.pop()
            self.deleted.append(victim)
        return timed('DELETE', self.dep.api_url +
                     '/v2/accelerator_requests?arqs=%s' % victim)

    def bind_arq(self):
        with self._lock:
            if not self._unbound:
                return self.create_arq()
            arq = self._unbound.pop()
            self.bound.append(arq)
        return self._send('PATCH', '/v2/accelerator_requests', {arq: [
            {'op': 'add', 'path': '/hostname', 'value': self.dep.host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': self._gpu['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid',
             'value': str(uuid.uuid4())}]})

    def create_lease(self):
        # Each in an hour of its own from tomorrow on: none would
        # conflict, all within the leases' horizon.
        with self._lock:
            hour = next(self._hours)
        start = self._tomorrow + datetime.timedelta(hours=hour)
        return self._send('POST', '/v2/leases', {
            'devices': [self._gpu_device], 'timezone': 'UTC',
            'start': start.isoformat(),
            'end': (start + datetime.timedelta(hours=1)).isoformat()})

    def create_attribute(self):
        return self._send('POST', '/v2/attributes', {
            'deployable_id': self._gpu_id,
            'key': 'cut-%d' % self._next(), 'value': 'x'})

    def program(self):
        return self._send(
            'PATCH', '/v2/deployables/%s/program' % self._region['uuid'],
            [{'op': 'replace', 'path': '/bitstream_id', 'value': IMAGE}])

    def create_rollout(self):
        return self._send('POST', '/v2/rollouts', {
            'kind': 'bitstream', 'image': IMAGE,
            'name': 'cut-%d' % self._next(),
            'strategy': {'canary': 1, 'waves': [1], 'gate_seconds': 0}})

    def ghosts(self, engine, created, refused):
        """What was written although its caller was answered 503.
        ``created``: the ARQs answered 201; ``refused``: the request ids
        of the writes answered 503. Empty lists when there is none."""
        def rows(query):
            if isinstance(query, str):
                query = sa.text(query)
            with engine.connect() as conn:
                return {row[0] for row in conn.execute(query)}
        arqs = rows('SELECT uuid FROM extended_accelerator_requests')
        return {
            'arqs_created': sorted(arqs - created),
            'arqs_deleted': sorted(set(self.deleted) - arqs),
            'arqs_bound': sorted(rows(
                "SELECT uuid FROM extended_accelerator_requests "
                "WHERE state <> 'Initial'") & set(self.bound)),
            'profiles_created': sorted(
                rows('SELECT name FROM device_profiles') - {self.profile}),
            'leases_created': sorted(rows('SELECT uuid FROM leases')),
            'attributes_created': sorted(rows(_CUT_ATTRIBUTES)),
            'operations_created': sorted(rows('SELECT uuid FROM operations')),
            'rollouts_created': sorted(rows('SELECT uuid FROM rollouts')),
            'changes_logged': sorted(rows(
                'SELECT request_id FROM changes') & refused),
        }
