"""The configuration files and processes of one cyborg_like cloud.

A :class:`Cloud` writes ``cyborg_like.conf`` (plus a database file that
only the processes owning the database read) into its work directory and
builds one :class:`~harness.process.Service` per process, in one of two
layouts:

- ``split``: ``conductor`` (and ``conductor2``... with their own
  ``[DEFAULT] host``), ``agent`` (optional) and ``api`` (the console script
  or gunicorn serving the WSGI application), as a real deployment runs;
- ``all-in-one``: one ``cyborg-like-all-in-one`` process.

What a user changes is configuration: ``config`` (sections of options
merged over the base file), ``extra_config`` (text every process reads
last, e.g. the keystone auth_token section) and ``service_config`` (text
one process reads last). Nothing here knows about pytest.
"""

import os
import sys

from harness import infra
from harness import process

BIN = os.path.dirname(sys.executable)
SPLIT, ALL_IN_ONE = 'split', 'all-in-one'
# The agent of a cloud made here runs the stand-in driver playbooks
# (tests/playbooks/README.md), never the real ones: those change the
# machine they run on (apt sources, packages, kernel modules), and any
# test that posts a driver operation (schemathesis does) would change
# this one.
STAND_IN_PLAYBOOKS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'tests', 'playbooks')


def render(sections):
    """``{section: {option: value}}`` as oslo.config file text."""
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        for name, value in options.items():
            if isinstance(value, bool):
                value = str(value).lower()
            lines.append('%s = %s' % (name, value))
        lines.append('')
    return '\n'.join(lines)


def merged(*layers):
    """Section dictionaries merged left to right (later options win)."""
    result = {}
    for layer in layers:
        for section, options in (layer or {}).items():
            result.setdefault(section, {}).update(options)
    return result


class Cloud:
    """One cloud: its work directory, configuration and processes.

    ``transport_url`` and ``db_url`` say where it runs (``db_url`` None:
    the all-in-one's own SQLite); ``auth_strategy`` None leaves the
    service's default. ``conductors`` > 1 starts more conductors on the
    same vhost and database. ``agent`` False runs no agent (the benchmarks
    simulate theirs); ``agent_wrapper`` is an argv prefix the agent runs
    under (e.g. ``['umockdev-wrapper']``) and ``agent_env`` extra
    environment variables of it. ``gunicorn_workers`` > 0 serves the API
    with gunicorn instead of the console script.
    """

    def __init__(self, workdir, transport_url=None, db_url=None,
                 layout=SPLIT, host=None, auth_strategy='noauth',
                 config=None, extra_config=None, service_config=None,
                 conductors=1, agent=True, agent_wrapper=(),
                 agent_env=None, api_env=None, gunicorn_workers=0,
                 gunicorn_threads=8):
        self.workdir = workdir
        self.transport_url = transport_url
        self.db_url = db_url
        self.layout = layout
        self.host = host or 'cloud-%s' % infra.unique_name('host')[-10:]
        self.api_port = infra.free_port()
        self.api_url = 'http://127.0.0.1:%d' % self.api_port
        self.config_file = os.path.join(workdir, 'cyborg_like.conf')
        # Only the processes owning the database are told where it is.
        self.db_config_file = os.path.join(workdir, 'database.conf')
        self.gunicorn_workers = gunicorn_workers
        self.gunicorn_threads = gunicorn_threads
        self.api_env = dict(api_env or {})
        # Where the stand-in playbooks keep the "installed driver".
        self.drivers_dir = os.path.join(workdir, 'drivers')
        os.makedirs(self.drivers_dir, exist_ok=True)
        agent_env = dict({'CYBORG_LIKE_TEST_DRIVERS': self.drivers_dir},
                         **(agent_env or {}))
        self._engine = None
        self._write(self.config_file, render(merged(
            self._base_config(auth_strategy), config)))
        self._write(self.db_config_file, render(
            {'database': {'connection': db_url}} if db_url else {}))
        # Every process reads these, in this order (later files win).
        self.config_files = [self.config_file]
        if extra_config:
            self.config_files.append(self._write(os.path.join(
                workdir, 'extra.conf'), extra_config))
        self._common = [arg for path in self.config_files
                        for arg in ('--config-file', path)]
        self._own = {name: self._write(os.path.join(
            workdir, '%s-own.conf' % name), text)
            for name, text in (service_config or {}).items()}
        self.services = {}
        if layout == ALL_IN_ONE:
            self._add('all-in-one', 'cyborg-like-all-in-one',
                      self._with_db(), 'API listening on', env=agent_env)
            return
        self.conductor_hosts = {'conductor': self.host}
        for number in range(2, conductors + 1):
            self.conductor_hosts['conductor%d' % number] = '%s-c%d' % (
                self.host, number)
        for name, chost in self.conductor_hosts.items():
            args = self._with_db()
            if chost != self.host:
                args += ['--config-file', self._write(os.path.join(
                    workdir, '%s.conf' % name),
                    '[DEFAULT]\nhost = %s\n' % chost)]
            self._add(name, 'cyborg-like-conductor', args,
                      'Conductor on %s listening' % chost)
        if agent:
            self._add('agent', 'cyborg-like-agent', list(self._common),
                      'Agent on %s started' % self.host, env=agent_env,
                      wrapper=agent_wrapper)
        self.services['api'] = self._api_service()

    @property
    def conductor_names(self):
        return list(getattr(self, 'conductor_hosts', ()))

    def _base_config(self, auth_strategy):
        config = {'DEFAULT': {'host': self.host, 'state_path':
                              os.path.join(self.workdir, 'state')},
                  'api': {'host_ip': '127.0.0.1', 'port': self.api_port},
                  'agent': {'playbook_dir': STAND_IN_PLAYBOOKS},
                  'fake_driver': {'driver_state_dir': self.drivers_dir}}
        if self.transport_url:
            config['DEFAULT']['transport_url'] = self.transport_url
        if auth_strategy:
            config['api']['auth_strategy'] = auth_strategy
        return config

    @staticmethod
    def _write(path, text):
        with open(path, 'w') as f:
            f.write(text)
        return path

    def _with_db(self):
        return self._common + ['--config-file', self.db_config_file]

    def _add(self, name, script, args, ready, env=None, wrapper=()):
        if name in self._own:
            args = args + ['--config-file', self._own[name]]
        self.services[name] = process.Service(
            name, list(wrapper) + [os.path.join(BIN, script)] + args,
            os.path.join(self.workdir, '%s.log' % name), ready, env=env)

    def _api_service(self):
        if not self.gunicorn_workers:
            self._add('api', 'cyborg-like-api', list(self._common),
                      'API listening on', env=self.api_env)
            return self.services['api']
        files = self.config_files + ([self._own['api']]
                                     if 'api' in self._own else [])
        return process.Service(
            'api',
            [os.path.join(BIN, 'gunicorn'), '-w', str(self.gunicorn_workers),
             '-k', 'gthread', '--threads', str(self.gunicorn_threads),
             '-b', '127.0.0.1:%d' % self.api_port, '--error-logfile', '-',
             '--log-level', 'info', '--keep-alive', '30',
             'cyborg_like.api.wsgi:application'],
            os.path.join(self.workdir, 'api-gunicorn.log'), 'Booting worker',
            env=dict(self.api_env,
                     CYBORG_LIKE_CONFIG_FILES=','.join(files)))

    def switch_api(self, gunicorn_workers):
        """Serve the API the other way (same port, the rest kept)."""
        self.services['api'].stop()
        self.gunicorn_workers = gunicorn_workers
        self.services['api'] = self._api_service()
        self.services['api'].start()

    # -- lifecycle

    def dbsync(self, *args, check=True):
        return infra.run([os.path.join(BIN, 'cyborg-like-dbsync')]
                         + self._with_db() + list(args or ['upgrade']),
                         check=check)

    def start_order(self):
        return [n for n in self.conductor_names + ['agent', 'api',
                                                   'all-in-one']
                if n in self.services]

    def start(self, *names):
        for name in names or self.start_order():
            self.services[name].start()

    def stop(self, *names):
        """Stop ``names`` (default: all, API first, conductors last);
        their exit codes (None: killed)."""
        return {name: self.services[name].stop()
                for name in names or self.start_order()[::-1]}

    def close(self):
        try:
            self.stop()
        finally:
            if self._engine is not None:
                self._engine.dispose()

    # -- looking inside

    @property
    def engine(self):
        """The user's own connection to the cloud's database."""
        if self._engine is None:
            import sqlalchemy as sa
            self._engine = sa.create_engine(self.db_url,
                                            poolclass=sa.pool.NullPool)
        return self._engine

    def logs(self):
        return {name: svc.tail() for name, svc in self.services.items()}

    def print_logs(self, stream=None, label=''):
        stream = stream or sys.stderr
        for name, svc in self.services.items():
            stream.write('----- cyborg-like-%s log%s (last %d lines of %s)'
                         '\n%s\n' % (name, label, process.LOG_TAIL_LINES,
                                      svc.log_path, svc.tail()))
