"""What a cloud under test runs on: a RabbitMQ vhost and a database of
its own, made with unique names and removed at the end, and the small
helpers every user of the harness needs (a free port, a bounded wait, a
command that must succeed).

A service that cannot be reached raises :class:`HarnessError` with the
command that starts it: the users exist to prove the system works on real
infrastructure, so they fail rather than skip.
"""

import contextlib
import os
import socket
import subprocess
import time
import uuid

RABBIT_HOST, RABBIT_PORT = '127.0.0.1', 5672
MARIADB_ADMIN_URL = 'mysql+pymysql://root@127.0.0.1:3306/'
POSTGRESQL_ADMIN_URL = 'postgresql+psycopg://postgres@127.0.0.1:5432/postgres'
DB_URLS = {
    'mariadb': 'mysql+pymysql://root@127.0.0.1:3306/%s?charset=utf8mb4',
    'postgresql': 'postgresql+psycopg://postgres@127.0.0.1:5432/%s',
}
BACKENDS = tuple(DB_URLS)
HOW_TO_START = {
    'rabbitmq': 'rabbitmq-server -detached',
    'mariadb': 'start-stop-daemon --start --oknodo --background '
               '--exec /usr/sbin/mariadbd',
    'postgresql': 'pg_ctlcluster --skip-systemctl-redirect '
                  '$(ls /etc/postgresql) main start',
}
WAIT_TIMEOUT = 30.0


class HarnessError(Exception):
    """Infrastructure or a process of the cloud did not do what it must."""


def unique_name(kind):
    """A name no other run uses: cyborg_like_it_<kind>_<pid>_<random>."""
    return 'cyborg_like_it_%s_%d_%s' % (kind, os.getpid(),
                                        uuid.uuid4().hex[:10])


def free_port():
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def wait_for(predicate, timeout=WAIT_TIMEOUT, message=None, interval=0.2,
             stop_on=()):
    """Poll ``predicate`` until it returns something true; return that.

    An exception of ``stop_on`` (a tuple of classes) ends the wait at
    once; any other is kept as the last result. Raises HarnessError with
    ``message`` (a string, or a callable asked at the end) and the last
    value or error seen after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            result = predicate()
            if result:
                return result
            last = result
        except stop_on:
            raise
        except Exception as exc:    # noqa: BLE001 - reported below
            last = exc
        if time.monotonic() >= deadline:
            if callable(message):
                message = message()
            raise HarnessError('%s (waited %.0fs; last result: %r)' % (
                message or 'Condition not met', timeout, last))
        time.sleep(interval)


def run(argv, timeout=120, check=True):
    """Run a command to its end; raise HarnessError if it fails."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout)
    except FileNotFoundError:
        raise HarnessError('%s is not installed or not on PATH'
                           % argv[0]) from None
    except subprocess.TimeoutExpired:
        raise HarnessError('%s did not finish within %ss'
                           % (' '.join(argv), timeout)) from None
    if check and proc.returncode != 0:
        raise HarnessError('%s exited with %d:\n%s%s' % (
            ' '.join(argv), proc.returncode, proc.stdout, proc.stderr))
    return proc


def check_tcp(name, host, port, how_to_start):
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise HarnessError('%s is not reachable on %s:%s (%s). Start it '
                           'with: %s' % (name, host, port, exc,
                                         how_to_start)) from None


@contextlib.contextmanager
def rabbitmq_vhost():
    """A fresh vhost for guest; yields its transport_url."""
    check_tcp('RabbitMQ', RABBIT_HOST, RABBIT_PORT, HOW_TO_START['rabbitmq'])
    vhost = unique_name('vhost')
    run(['rabbitmqctl', '-q', 'add_vhost', vhost], timeout=60)
    try:
        run(['rabbitmqctl', '-q', 'set_permissions', '-p', vhost, 'guest',
             '.*', '.*', '.*'], timeout=60)
        yield 'rabbit://guest:guest@%s:%d/%s' % (RABBIT_HOST, RABBIT_PORT,
                                                vhost)
    finally:
        run(['rabbitmqctl', '-q', 'delete_vhost', vhost], timeout=60)


def _admin_engine(backend):
    import sqlalchemy as sa
    url = {'mariadb': MARIADB_ADMIN_URL,
           'postgresql': POSTGRESQL_ADMIN_URL}[backend]
    engine = sa.create_engine(url, isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
    except Exception as exc:
        engine.dispose()
        raise HarnessError('%s is not reachable at %s (%s). Start it with: '
                           '%s' % (backend, url, exc, HOW_TO_START[backend])
                           ) from None
    return engine


def _quoted(backend, name):
    return ('`%s`' if backend == 'mariadb' else '"%s"') % name


@contextlib.contextmanager
def fresh_database(backend):
    """A new, empty database; yields its SQLAlchemy URL. Dropped at the end.
    """
    import sqlalchemy as sa
    name = unique_name('db')
    admin = _admin_engine(backend)
    create = 'CREATE DATABASE %s' % _quoted(backend, name)
    drop = 'DROP DATABASE IF EXISTS %s' % _quoted(backend, name)
    if backend == 'mariadb':
        create += ' CHARACTER SET utf8mb4'
    else:
        # Connections a killed service left behind must not keep it.
        drop += ' WITH (FORCE)'
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(create))
        try:
            yield DB_URLS[backend] % name
        finally:
            with admin.connect() as conn:
                conn.execute(sa.text(drop))
    finally:
        admin.dispose()
