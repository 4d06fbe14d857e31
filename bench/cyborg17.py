"""OpenStack Cyborg 17.0.0 (from PyPI) as the reference of ``compare``.

Its own virtualenv (``tools/setup-cyborg17-venv.sh``, git-ignored under
``.cache/``), its own RabbitMQ vhost and MariaDB database on the same
servers as ours. Started as a deployment would: ``cyborg-dbsync upgrade``,
``cyborg-conductor``, and the API as ``cyborg.wsgi.api:application`` under
uWSGI (``pyuwsgi``, the PyPI build of uWSGI) with ``--processes N`` behind
uWSGI's own HTTP router (``--http --http-keepalive``, one more process,
counted with the API).

Cyborg has no noauth mode: its API pipeline is ``cors http_proxy_to_wsgi
request_id authtoken api_v2``. We write our own ``api-paste.ini`` (a
configuration file Cyborg reads from ``[api] api_paste_config``) with the
same pipeline less ``authtoken``, and every request carries the headers
keystonemiddleware would have set for an admin of one project with a
service token (``X-Roles``, ``X-Project-Id``, ``X-Service-Roles``: Cyborg
17 lets only service-token callers bind, unbind and delete bound ARQs).
No Cyborg code is changed.

Cyborg's conductor tells Nova when an ARQ bind is resolved (an external
event, ``POST /os-server-external-events``); ``[nova]`` points, with
keystoneauth's ``none`` plugin, at a stub in the bench process
(``NovaStub``) that answers 200. Cyborg's agent is not run: the fixtures are
written into Cyborg's own schema (after ``cyborg-dbsync upgrade``) by
``bench.compare_fixtures``.
"""

import http.server
import json
import os
import socketserver
import threading

import sqlalchemy as sa

from bench import infra
from harness.process import Service

ROOT = infra.ROOT
VENV = os.path.join(ROOT, '.cache', 'cyborg17-venv')
SETUP = os.path.join(ROOT, 'tools', 'setup-cyborg17-venv.sh')
VERSION = '17.0.0'

# What keystonemiddleware would pass on for an admin with a service token.
PROJECT_ID = 'b0b0b0b0b0b04b0b8b0bb0b0b0b0b0b0'
USER_ID = 'a1a1a1a1a1a14a1a8a1aa1a1a1a1a1a1'
HEADERS = {
    'X-Roles': 'admin,member,reader',
    'X-Project-Id': PROJECT_ID,
    'X-Tenant-Id': PROJECT_ID,
    'X-User-Id': USER_ID,
    'X-Service-Roles': 'service',
    'X-Identity-Status': 'Confirmed',
    'X-Service-Identity-Status': 'Confirmed',
    'OpenStack-API-Version': 'accelerator 2.0',
}

PASTE = """[pipeline:main]
pipeline = cors http_proxy_to_wsgi request_id api_v2

[app:api_v2]
paste.app_factory = cyborg.api.app:app_factory

[filter:request_id]
paste.filter_factory = oslo_middleware:RequestId.factory

[filter:cors]
paste.filter_factory =  oslo_middleware.cors:filter_factory
oslo_config_project = cyborg

[filter:http_proxy_to_wsgi]
paste.filter_factory = %s
""" % (
    'oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory')


def ensure_venv():
    """The venv with Cyborg 17, made by tools/setup-cyborg17-venv.sh."""
    if not os.path.exists(os.path.join(VENV, 'bin', 'cyborg-api')):
        infra.log('installing Cyborg %s into %s (tools/setup-cyborg17-'
                  'venv.sh)', VERSION, VENV)
        infra.run(['bash', SETUP, VENV], timeout=1800)
    return VENV


def venv_versions():
    out = infra.run([os.path.join(VENV, 'bin', 'python'), '-c',
                     'import importlib.metadata as m, json; print(json.dumps('
                     '{d: m.version(d) for d in ("openstack-cyborg", '
                     '"oslo.messaging", "oslo.db", "SQLAlchemy", "PyMySQL", '
                     '"pecan", "WSME", "pyuwsgi", "kombu")}))']).stdout
    return json.loads(out)


def descendants(pid):
    """``pid`` and every process below it (by parent pid, from /proc)."""
    parents = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(parents.get(p, []))
    return found


class _NovaHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}')
        events = body.get('events', [])
        for event in events:
            event['code'] = 200
            event['status'] = event.get('status', 'completed')
        with self.server.lock:
            self.server.events += len(events)
        data = json.dumps({'events': events}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        # Version discovery by keystoneauth (Placement at start, Nova at
        # each notification).
        base = 'http://%s:%d' % self.server.server_address
        if self.path.startswith('/placement'):
            doc = {'id': 'v1.0', 'status': 'CURRENT', 'max_version': '1.39',
                   'min_version': '1.0',
                   'links': [{'rel': 'self', 'href': base + '/placement'}]}
        else:
            doc = {'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                   'min_version': '2.1',
                   'links': [{'rel': 'self',
                              'href': base + '/compute/v2.1'}]}
        data = json.dumps({'versions': [doc]}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class NovaStub(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """Answers Cyborg's external events 200 (in the bench process)."""

    daemon_threads = True

    def __init__(self):
        super().__init__(('127.0.0.1', infra.free_port()), _NovaHandler)
        self.lock = threading.Lock()
        self.events = 0
        self.thread = threading.Thread(target=self.serve_forever,
                                       daemon=True)
        self.thread.start()

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.server_address[1]

    def close(self):
        self.shutdown()
        self.server_close()


CONDUCTOR_START_TIMEOUT = 600


class CyborgDeployment:
    """Cyborg 17's conductor and API (uWSGI) on one vhost and database."""

    def __init__(self, workdir, transport_url, db_url, nova_url,
                 api_workers=2, api_threads=1):
        self.workdir = os.path.join(workdir, 'cyborg17')
        os.makedirs(self.workdir, exist_ok=True)
        self.db_url = db_url
        self.api_workers = api_workers
        self.port = infra.free_port()
        self.api_url = 'http://127.0.0.1:%d' % self.port
        self.config_file = os.path.join(self.workdir, 'cyborg.conf')
        paste = os.path.join(self.workdir, 'api-paste.ini')
        with open(paste, 'w') as f:
            f.write(PASTE)
        # oslo.db URL: Cyborg's own charset handling (utf8 tables).
        cy_db = db_url.replace('charset=utf8mb4', 'charset=utf8')
        with open(self.config_file, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\nhost = bench-cyborg\n'
                    'debug = False\nuse_stderr = True\n\n'
                    '[database]\nconnection = %s\n\n'
                    '[api]\napi_paste_config = %s\n\n'
                    '[nova]\nauth_type = none\nendpoint_override = '
                    '%s/compute/v2.1\n\n'
                    '[placement]\nauth_type = none\nendpoint_override = '
                    '%s/placement\n\n'
                    '[oslo_concurrency]\nlock_path = %s\n'
                    % (transport_url, cy_db, paste, nova_url, nova_url,
                       os.path.join(self.workdir, 'locks')))
        bin_ = os.path.join(VENV, 'bin')
        self.services = {
            'conductor': Service(
                'cyborg-conductor',
                [os.path.join(bin_, 'cyborg-conductor'), '--config-file',
                 self.config_file],
                os.path.join(self.workdir, 'conductor.log'),
                'Created RPC server for service', cwd=self.workdir),
            'api': Service(
                'cyborg-api-uwsgi',
                [os.path.join(bin_, 'uwsgi'), '--master', '--processes',
                 str(api_workers), '--threads', str(api_threads),
                 '--enable-threads', '--lazy-apps', '--die-on-term',
                 # uWSGI's HTTP router in front (as Apache or nginx would
                 # be): it keeps clients' connections alive and hands each
                 # request to a free worker. (With --http11-socket a worker
                 # stays with one kept-alive connection and the others
                 # wait.)
                 '--http', '127.0.0.1:%d' % self.port, '--http-keepalive',
                 '--need-app', '--module', 'cyborg.wsgi.api:application',
                 '--pyargv', '--config-file %s' % self.config_file,
                 '--disable-logging', '--buffer-size', '65535'],
                os.path.join(self.workdir, 'api.log'),
                'spawned uWSGI worker %d' % api_workers, cwd=self.workdir),
        }
        self.engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)

    def dbsync(self):
        infra.run([os.path.join(VENV, 'bin', 'cyborg-dbsync'),
                   '--config-file', self.config_file, 'upgrade'],
                  timeout=300)

    def start(self):
        # Cyborg's conductor first backfills device_state 50 devices at a
        # time (~0.4 s each here): 80 s for 10,000 devices.
        self.services['conductor'].start(CONDUCTOR_START_TIMEOUT)
        self.services['api'].start(infra.START_TIMEOUT)
        infra.wait_for(lambda: self.get('/v2')[0] == 200, 60,
                       'Cyborg\'s API never answered GET /v2')
        # Each worker loads the app lazily: warm both.
        for _ in range(4 * self.api_workers):
            self.get('/v2/device_profiles')
        self.api_rss_at_start = self.api_memory()

    def get(self, path):
        from bench import client
        c = client.Client(self.api_url)
        try:
            status, body, _ = c.request('GET', path, headers=HEADERS)
            return status, body
        finally:
            c.close()

    def close(self):
        for name in ('api', 'conductor'):
            self.services[name].stop()
        self.engine.dispose()

    def print_logs(self):
        for svc in self.services.values():
            infra.log('--- %s log (tail) ---\n%s', svc.name, svc.tail(60))

    def pids(self, name):
        """A service's process and all its descendants (oslo.service forks
        the conductor's worker from a thread, which harness.process.children
        does not see)."""
        svc = self.services[name]
        return descendants(svc.pid) if svc.running else []

    def api_memory(self):
        pids = self.pids('api')
        per = [infra.rss_mb(p) for p in pids]
        return {'pids': pids,
                'rss_mb': [round(r or 0, 1) for r, _ in per],
                'peak_rss_mb': [round(h or 0, 1) for _, h in per],
                'total_rss_mb': round(sum(r or 0 for r, _ in per), 1)}

    def cpu(self):
        used = {name: round(sum(infra.cpu_seconds(p) or 0
                                for p in self.pids(name)), 2)
                for name in self.services}
        used.update(infra.infra_cpu())
        return used

    def scalar(self, sql, **params):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(sql), params).scalar()

    def load(self, rows):
        """Insert the fixture rows (bench.compare_fixtures.cyborg_rows) in
        foreign-key order, in batches."""
        with self.engine.begin() as conn:
            for table, items in rows.items():
                if not items:
                    continue
                cols = list(items[0])
                sql = sa.text('INSERT INTO %s (%s) VALUES (%s)' % (
                    table, ', '.join('`%s`' % c for c in cols),
                    ', '.join(':' + c for c in cols)))
                for i in range(0, len(items), 1000):
                    conn.execute(sql, items[i:i + 1000])
