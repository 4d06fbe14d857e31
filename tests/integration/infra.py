"""Running cyborg_like as real processes on real infrastructure.

Every test run makes its own RabbitMQ vhost, MariaDB database and PostgreSQL
database, with unique names, and removes them at the end. The services are
the console scripts of the virtualenv, started as separate OS processes with
their logs in files under the test's temporary directory; the logs are added
to the report of any test that fails.

A service that cannot be reached makes the fixtures *fail*, never skip: these
tests exist to prove the system works on real infrastructure.
"""

import contextlib
import datetime
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
import requests
import sqlalchemy as sa
import yaml

BIN = os.path.dirname(sys.executable)

RABBIT_HOST, RABBIT_PORT = '127.0.0.1', 5672
MARIADB_ADMIN_URL = 'mysql+pymysql://root@127.0.0.1:3306/'
POSTGRESQL_ADMIN_URL = 'postgresql+psycopg://postgres@127.0.0.1:5432/postgres'
DB_URLS = {
    'mariadb': 'mysql+pymysql://root@127.0.0.1:3306/%s?charset=utf8mb4',
    'postgresql': 'postgresql+psycopg://postgres@127.0.0.1:5432/%s',
}
BACKENDS = tuple(DB_URLS)

# Short intervals keep the suite fast; the timeouts bound every wait.
CONDUCTOR_TIMEOUT = 2.0
DISCOVERY_INTERVAL = 1
HEARTBEAT_INTERVAL = 1
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
WAIT_TIMEOUT = 30.0
LOG_TAIL_LINES = 150

# The inventory the fake driver of every deployment starts with.
BASE_INVENTORY = {'devices': [
    {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC Arria 10 GX',
     'pci_address': '0000:5e:00.0',
     'std_board_info': {'device_id': '0x09c4', 'class': 'Fuzzy FPGA'},
     'vendor_board_info': {'shell': 'it-shell-0'},
     'deployables': [
         {'name': 'region0', 'bitstream_id': None,
          'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                         'trait1': 'CUSTOM_FPGA_REGION_0'},
          'pci_functions': ['0000:5e:00.1']},
         {'name': 'region1',
          'bitstream_id': '0a1b2c3d-0000-4000-8000-00000000000e',
          'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                         'trait1': 'CUSTOM_FPGA_REGION_1'},
          'pci_functions': ['0000:5e:00.2', '0000:5e:00.3']}]},
    {'type': 'GPU', 'vendor': '0x10de', 'model': 'Tesla T4',
     'pci_address': '0000:af:00.0',
     'std_board_info': {'device_id': '0x1eb8', 'class': '0x030200'},
     'deployables': [
         {'name': 'gpu0',
          'attributes': {'rc': 'PGPU', 'trait0': 'CUSTOM_GPU_NVIDIA'},
          'pci_functions': ['0000:af:00.0']}]},
]}


def unique_name(kind):
    """A name no other run uses: cyborg_like_it_<kind>_<pid>_<random>."""
    return 'cyborg_like_it_%s_%d_%s' % (kind, os.getpid(),
                                        uuid.uuid4().hex[:10])


def free_port():
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def wait_for(predicate, timeout=WAIT_TIMEOUT, interval=0.2, message=None):
    """Poll ``predicate`` until it returns something true; return that.

    Fails the test with ``message`` (and the last value or error seen)
    after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            result = predicate()
            if result:
                return result
            last = result
        except Exception as exc:    # noqa: BLE001 - reported below
            last = exc
        if time.monotonic() >= deadline:
            pytest.fail('%s (waited %.0fs; last result: %r)'
                        % (message or 'Condition not met', timeout, last),
                        pytrace=False)
        time.sleep(interval)


def _run(argv, timeout=60, check=True):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout)
    except FileNotFoundError:
        pytest.fail('%s is not installed or not on PATH' % argv[0],
                    pytrace=False)
    except subprocess.TimeoutExpired:
        pytest.fail('%s did not finish within %ss' % (' '.join(argv),
                                                      timeout), pytrace=False)
    if check and proc.returncode != 0:
        pytest.fail('%s exited with %d:\n%s%s' % (
            ' '.join(argv), proc.returncode, proc.stdout, proc.stderr),
            pytrace=False)
    return proc


# --- Infrastructure: vhosts and databases -----------------------------------

def _check_tcp(name, host, port, how_to_start):
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        pytest.fail('%s is not reachable on %s:%s (%s). Start it with: %s'
                    % (name, host, port, exc, how_to_start), pytrace=False)


@contextlib.contextmanager
def rabbitmq_vhost():
    """A fresh vhost for guest; yields its transport_url."""
    _check_tcp('RabbitMQ', RABBIT_HOST, RABBIT_PORT,
               'rabbitmq-server -detached')
    vhost = unique_name('vhost')
    _run(['rabbitmqctl', '-q', 'add_vhost', vhost])
    try:
        _run(['rabbitmqctl', '-q', 'set_permissions', '-p', vhost, 'guest',
              '.*', '.*', '.*'])
        yield 'rabbit://guest:guest@%s:%d/%s' % (RABBIT_HOST, RABBIT_PORT,
                                                vhost)
    finally:
        _run(['rabbitmqctl', '-q', 'delete_vhost', vhost])


def _admin_engine(backend):
    url = {'mariadb': MARIADB_ADMIN_URL,
           'postgresql': POSTGRESQL_ADMIN_URL}[backend]
    engine = sa.create_engine(url, isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
    except Exception as exc:
        engine.dispose()
        how = {'mariadb': 'start-stop-daemon --start --oknodo --background '
                          '--exec /usr/sbin/mariadbd',
               'postgresql': 'pg_ctlcluster --skip-systemctl-redirect '
                             '$(ls /etc/postgresql) main start'}[backend]
        pytest.fail('%s is not reachable at %s (%s). Start it with: %s'
                    % (backend, url, exc, how), pytrace=False)
    return engine


@contextlib.contextmanager
def fresh_database(backend):
    """A new, empty database; yields its SQLAlchemy URL. Dropped at the end.
    """
    name = unique_name('db')
    admin = _admin_engine(backend)
    try:
        with admin.connect() as conn:
            if backend == 'mariadb':
                conn.execute(sa.text(
                    'CREATE DATABASE `%s` CHARACTER SET utf8mb4' % name))
            else:
                conn.execute(sa.text('CREATE DATABASE "%s"' % name))
        try:
            yield DB_URLS[backend] % name
        finally:
            with admin.connect() as conn:
                if backend == 'mariadb':
                    conn.execute(sa.text('DROP DATABASE IF EXISTS `%s`'
                                         % name))
                else:
                    conn.execute(sa.text(
                        'DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name))
    finally:
        admin.dispose()


# --- Processes --------------------------------------------------------------

class Service:
    """One console script run as its own OS process, logging to a file."""

    def __init__(self, name, argv, log_path, ready_line, env=None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.ready_line = ready_line
        # Extra environment variables of the process (None: inherit as is).
        self.env = env
        self.proc = None
        self._log = None

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        assert not self.running, '%s is already running' % self.name
        if not os.path.exists(self.argv[0]):
            pytest.fail('%s is missing: run the tests with the virtualenv '
                        'made by tools/setup-venv.sh' % self.argv[0],
                        pytrace=False)
        offset = self.log_size()
        self._log = open(self.log_path, 'ab')
        env = None
        if self.env:
            env = dict(os.environ)
            env.update(self.env)
        self.proc = subprocess.Popen(self.argv, stdout=self._log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=env)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail('%s exited with %s while starting:\n%s' % (
                    self.name, self.proc.returncode, self.tail()),
                    pytrace=False)
            if self.ready_line in self.read_log(offset):
                return
            time.sleep(0.1)
        pytest.fail('%s did not log %r within %.0fs:\n%s' % (
            self.name, self.ready_line, START_TIMEOUT, self.tail()),
            pytrace=False)

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, then SIGKILL if it is still there after ``timeout``.

        Returns the exit code, or None if it had to be killed.
        """
        if self.proc is None:
            return None
        code = None
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    code = self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
            else:
                code = self.proc.returncode
        finally:
            self.proc = None
            if self._log is not None:
                self._log.close()
                self._log = None
        return code

    def log_size(self):
        """Where the log ends now: an offset for ``read_log``."""
        try:
            return os.path.getsize(self.log_path)
        except FileNotFoundError:
            return 0

    def read_log(self, offset=0):
        try:
            with open(self.log_path, 'rb') as f:
                f.seek(offset)
                return f.read().decode('utf-8', 'replace')
        except FileNotFoundError:
            return ''

    def tail(self, lines=LOG_TAIL_LINES):
        return '\n'.join(self.read_log().splitlines()[-lines:])


class Deployment:
    """Conductor, agent and API of one test run, on one database backend.

    Optional: ``conductors`` > 1 starts more conductor processes (services
    ``conductor2``, ``conductor3``, ... each with its own ``[DEFAULT] host``)
    on the same vhost and database; ``inventory`` replaces BASE_INVENTORY;
    ``extra_config`` is configuration text every service reads after the
    shared file (so it overrides it, e.g. a longer [api] conductor_timeout);
    ``agent_config`` is extra configuration text read by the agent only
    (after the shared file, so it overrides it); ``agent_wrapper`` is an
    argv prefix the agent runs under (e.g. ``['umockdev-wrapper']``) and
    ``agent_env`` extra environment variables of the agent process.
    """

    def __init__(self, backend, workdir, transport_url, db_url,
                 conductors=1, inventory=None, extra_config=None,
                 agent_config=None, agent_wrapper=(), agent_env=None):
        self.backend = backend
        self.workdir = workdir
        self.transport_url = transport_url
        self.db_url = db_url
        self.host = 'it-host-%s' % uuid.uuid4().hex[:8]
        self.api_port = free_port()
        self.api_url = 'http://127.0.0.1:%d' % self.api_port
        self.inventory_file = os.path.join(workdir, 'inventory.yaml')
        self.config_file = os.path.join(workdir, 'cyborg_like.conf')
        # Only the conductor (and dbsync) are told where the database is.
        self.db_config_file = os.path.join(workdir, 'database.conf')
        self.services = {}
        self._engine = None
        self.write_inventory(BASE_INVENTORY if inventory is None
                             else inventory)
        self._write_config()
        common = ['--config-file', self.config_file]
        if extra_config:
            extra_config_file = os.path.join(workdir, 'extra.conf')
            with open(extra_config_file, 'w') as f:
                f.write(extra_config)
            common += ['--config-file', extra_config_file]
        with_db = common + ['--config-file', self.db_config_file]
        agent_args = list(common)
        if agent_config:
            agent_config_file = os.path.join(workdir, 'agent.conf')
            with open(agent_config_file, 'w') as f:
                f.write(agent_config)
            agent_args += ['--config-file', agent_config_file]
        # Conductor i > 1 is service conductor<i> on host <host>-c<i>.
        self.conductor_hosts = {'conductor': self.host}
        for number in range(2, conductors + 1):
            name = 'conductor%d' % number
            self.conductor_hosts[name] = '%s-c%d' % (self.host, number)
        self.conductor_names = list(self.conductor_hosts)
        for name, host in self.conductor_hosts.items():
            args = with_db
            if name != 'conductor':
                own = os.path.join(workdir, '%s.conf' % name)
                with open(own, 'w') as f:
                    f.write('[DEFAULT]\nhost = %s\n' % host)
                args = with_db + ['--config-file', own]
            self.services[name] = Service(
                name, [os.path.join(BIN, 'cyborg-like-conductor')] + args,
                os.path.join(workdir, '%s.log' % name),
                'Conductor on %s listening' % host)
        for name, argv, ready, env in (
                ('agent', list(agent_wrapper) + [
                    os.path.join(BIN, 'cyborg-like-agent')] + agent_args,
                 'Agent on %s started' % self.host, agent_env),
                ('api', [os.path.join(BIN, 'cyborg-like-api')] + common,
                 'API listening on', None)):
            self.services[name] = Service(
                name, argv, os.path.join(workdir, '%s.log' % name), ready,
                env=env)

    def _write_config(self):
        with open(self.config_file, 'w') as f:
            f.write(f"""[DEFAULT]
transport_url = {self.transport_url}
host = {self.host}
state_path = {os.path.join(self.workdir, 'state')}

[api]
host_ip = 127.0.0.1
port = {self.api_port}
auth_strategy = noauth
conductor_timeout = {CONDUCTOR_TIMEOUT}

[agent]
enabled_drivers = fake
discovery_interval = {DISCOVERY_INTERVAL}
heartbeat_interval = {HEARTBEAT_INTERVAL}
report_timeout = {CONDUCTOR_TIMEOUT}

[conductor]
host_down_after = 30

[fake_driver]
inventory_file = {self.inventory_file}
""")
        with open(self.db_config_file, 'w') as f:
            f.write('[database]\nconnection = %s\n' % self.db_url)

    # -- lifecycle

    def dbsync(self, *args, check=True):
        return _run([os.path.join(BIN, 'cyborg-like-dbsync'),
                     '--config-file', self.config_file,
                     '--config-file', self.db_config_file] + list(args),
                    check=check)

    def start(self, *names):
        for name in names or self.conductor_names + ['agent', 'api']:
            self.services[name].start()

    def stop(self, *names):
        codes = {}
        for name in names or ['api', 'agent'] + self.conductor_names[::-1]:
            codes[name] = self.services[name].stop()
        return codes

    def close(self):
        try:
            self.stop()
        finally:
            if self._engine is not None:
                self._engine.dispose()

    # -- what the tests use

    def write_inventory(self, document):
        # Written aside and renamed, so the agent never reads half a file.
        tmp = self.inventory_file + '.tmp'
        with open(tmp, 'w') as f:
            yaml.safe_dump(document, f)
        os.replace(tmp, self.inventory_file)

    def get(self, path, timeout=WAIT_TIMEOUT, **kwargs):
        kwargs.setdefault('headers', {
            'OpenStack-API-Version': 'accelerator latest'})
        return requests.get(self.api_url + path, timeout=timeout, **kwargs)

    def list_ok(self, resource):
        """GET /v2/<resource>; asserts 200 and returns the items."""
        resp = self.get('/v2/%s' % resource)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        return resp.json()[resource]

    def wait_for_devices(self, predicate, message):
        def check():
            devices = self.list_ok('devices')
            return devices if predicate(devices) else None
        return wait_for(check, message=message)

    @property
    def engine(self):
        """The test's own connection to the deployment's database."""
        if self._engine is None:
            self._engine = sa.create_engine(self.db_url,
                                            poolclass=sa.pool.NullPool)
        return self._engine

    def host_row(self):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT hostname, last_heartbeat, agent_version, '
                'inventory_hash FROM hosts WHERE hostname = :h'),
                {'h': self.host}).mappings().first()

    def wait_host_up(self, timeout=WAIT_TIMEOUT):
        """Until the agent's heartbeat is in the hosts table (binds need
        the host up); returns the row."""
        return wait_for(
            lambda: (lambda row: row if row and row['last_heartbeat']
                     else None)(self.host_row()),
            timeout=timeout,
            message='No heartbeat of %s in the hosts table' % self.host)

    def logs(self):
        return {name: svc.tail() for name, svc in self.services.items()}

    def print_logs(self, stream=None):
        stream = stream or sys.stderr
        for name, text in self.logs().items():
            stream.write('----- cyborg-like-%s log (%s, last %d lines of %s)'
                         '\n%s\n' % (name, self.backend, LOG_TAIL_LINES,
                                      self.services[name].log_path, text))


@contextlib.contextmanager
def running_deployment(backend, workdir, wait_for_devices=None, **kwargs):
    """A :class:`Deployment` (``kwargs``) on a fresh vhost and database,
    migrated and started; with ``wait_for_devices`` (a predicate on the
    API's device list) until the API shows what it wants. Its logs go to
    stderr when it cannot start; everything is removed at the end.
    """
    with rabbitmq_vhost() as transport_url, \
            fresh_database(backend) as db_url:
        dep = Deployment(backend, workdir, transport_url, db_url, **kwargs)
        try:
            try:
                dep.dbsync('upgrade')
                dep.start()
                if wait_for_devices is not None:
                    dep.wait_for_devices(
                        wait_for_devices,
                        'The devices the agent should discover never '
                        'appeared through the API')
            except BaseException:
                dep.print_logs()
                raise
            yield dep
        finally:
            dep.close()


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def head_revision():
    """The newest revision of cyborg_like's alembic migrations."""
    from alembic import config as alembic_config
    from alembic import script as alembic_script
    import cyborg_like.db
    ini = os.path.join(os.path.dirname(cyborg_like.db.__file__),
                       'alembic.ini')
    return alembic_script.ScriptDirectory.from_config(
        alembic_config.Config(ini)).get_current_head()
